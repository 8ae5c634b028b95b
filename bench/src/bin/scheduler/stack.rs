//! What the Kafka phases share: fresh names, the topics and control table
//! the scheduler needs, the plan requests, and a scheduler instance on its
//! own thread, run exactly as `callstream process scheduler` runs it.

use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
pub use callstream_bench::kafka::block_on;
use callstream_bench::kafka::unique_name;
use callstream_bench::processor::{instance_config, ProcessorError, RunningProcessor};
use callstream_control::{apply_file, ControlFile};
use callstream_platform::{admin, topics, KafkaSettings, Topics};
use callstream_scheduler::{processor, spec, SchedulerConfig};
use callstream_schemas::{
    Actor, JobOrigin, ScheduleRequest, ScheduleRequestKind, Timestamp, ZoneSource,
};
use chrono::{DateTime, Utc};
use rdkafka::consumer::{BaseConsumer, Consumer};
use uuid::Uuid;

/// The campaign every request plans for (its window is set by control).
pub const CAMPAIGN: &str = "bench";
/// The leads' zone: federal hours 08:00–21:00 Chicago bound every day.
const ZONE: &str = "America/Chicago";
/// Slots a tenant's grid offers per day with the control file below
/// (13 calling hours of 75 s slots), per launch a slot may hold.
const SLOTS_PER_DAY: u64 = 13 * 3600 / 75;
/// The scheduler's default search horizon past a request's earliest time.
const HORIZON_DAYS: u64 = 28;

/// Fails fast, with the fix, when no broker answers.
pub fn check_reachable(settings: &KafkaSettings) -> Result<()> {
    let consumer: BaseConsumer = settings
        .base_config()
        .create()
        .context("creating a Kafka client")?;
    consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .map(|_| ())
        .with_context(|| {
            format!(
                "no Kafka broker answers at {} (start the dev stack with `cargo xtask up`, \
                 or set KAFKA_BOOTSTRAP_SERVERS)",
                settings.bootstrap_servers
            )
        })
}

/// Fresh names for one measurement: nothing an earlier run left matters.
#[derive(Debug, Clone)]
pub struct Names {
    pub topics: Topics,
    pub app: String,
}

/// The logical topics the scheduler reads and writes.
const TOPICS: [&str; 7] = [
    topics::SCHEDULE_REQUESTS,
    topics::SCHEDULE_EVENTS,
    topics::CONTACT_COMMANDS,
    topics::EXCEPTIONS,
    topics::CONTROL,
    // `control apply` writes each change to the history in the same transaction.
    topics::CONTROL_HISTORY,
    topics::DEAD_LETTERS,
];

impl Names {
    pub fn fresh(label: &str, partitions: i32) -> Self {
        let prefix = format!("{}-", unique_name(&format!("bench-sched-{label}")));
        let topics = Topics {
            partitions,
            ..Topics::with_prefix(&prefix)
        };
        Self {
            app: format!("{prefix}scheduler"),
            topics,
        }
    }

    pub fn name(&self, logical: &str) -> String {
        self.topics.name(logical)
    }

    /// Every topic a run with these names creates, changelogs included.
    pub fn topic_names(&self) -> Vec<String> {
        let spec = spec(&self.topics, &self.app);
        let mut names: Vec<String> = TOPICS.iter().map(|t| self.name(t)).collect();
        names.extend(spec.changelog_topics(callstream_scheduler::STORES));
        names
    }

    /// Creates the scheduler's topics (the runtime creates its changelogs)
    /// and publishes the control table, as `callstream control apply` does.
    pub fn create(&self, settings: &KafkaSettings, workload: &Workload) -> Result<()> {
        let specs: Vec<_> = self
            .topics
            .specs()
            .into_iter()
            .filter(|s| TOPICS.iter().any(|t| s.name == self.name(t)))
            .collect();
        block_on(admin::ensure_topics(settings, &specs))?
            .with_context(|| format!("creating the topics of {}", self.app))?;
        let file = ControlFile::parse(&workload.control_file())
            .map_err(|e| anyhow!("the benchmark's control file is invalid: {e}"))?;
        // A topic created a moment ago can still answer "not leader" to
        // the first metadata request; that passes within a few seconds.
        let mut attempt = 0;
        loop {
            let published = block_on(apply_file(
                settings,
                &self.name(topics::CONTROL),
                &file,
                Actor::operator("bench"),
                Some("scheduler benchmark".into()),
                false,
            ))?;
            match published {
                Ok(_) => return Ok(()),
                Err(error) if attempt < 10 => {
                    attempt += 1;
                    tracing::debug!(%error, attempt, "control topic not ready; retrying");
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(error) => return Err(error).context("publishing the control table"),
            }
        }
    }
}

/// The shape of the requests.
#[derive(Debug, Clone)]
pub struct Workload {
    pub tenants: u64,
    pub launches_per_slot: u32,
    /// From now to the first earliest time.
    pub lead: Duration,
    /// Earliest times are spread over this span.
    pub spread: Duration,
}

impl Workload {
    pub fn tenant(&self, i: u64) -> String {
        format!("bench-t{}", i % self.tenants)
    }

    /// One grid and campaign per tenant: every day, as wide as federal
    /// hours allow, so capacity is simple to reason about.
    pub fn control_file(&self) -> String {
        let mut file = String::new();
        for t in 0..self.tenants {
            let tenant = self.tenant(t);
            file.push_str(&format!(
                "[tenants.{tenant}.grid]\nslot_seconds = 75\nlaunches_per_slot = {}\n\
                 default_time_zone = \"{ZONE}\"\n\n\
                 [tenants.{tenant}.campaigns.{CAMPAIGN}]\n\
                 windows = [{{ days = \"every_day\", start = \"08:00\", end = \"21:00\" }}]\n\
                 move_buffer_minutes = 15\n\n",
                self.launches_per_slot
            ));
        }
        file
    }

    /// Refuses a load whose tenants would run out of slots: a refusal is
    /// not an allocation, and a nearly full grid measures the search, not
    /// the scheduler.
    pub fn check_capacity(&self, requests: u64) -> Result<()> {
        let per_tenant = requests.div_ceil(self.tenants);
        let slots = HORIZON_DAYS * SLOTS_PER_DAY * u64::from(self.launches_per_slot);
        if per_tenant * 5 > slots * 4 {
            bail!(
                "{per_tenant} requests per tenant would fill more than 80% of the {slots} slots \
                 a tenant has in the {HORIZON_DAYS}-day horizon; raise --tenants or \
                 --launches-per-slot"
            );
        }
        Ok(())
    }

    /// Plan request `i` (job `i`, contact `c<i>`, tenant `i mod tenants`),
    /// with event id `event_id`, no earlier than `base` plus its share of
    /// the spread.
    pub fn request(&self, i: u64, event_id: Uuid, base: DateTime<Utc>) -> ScheduleRequest {
        // A deterministic scatter over the spread, to the second.
        let spread_s = self.spread.as_secs().max(1);
        let offset = (i.wrapping_mul(2_654_435_761) % spread_s) as i64;
        let earliest: Timestamp = base + chrono::TimeDelta::seconds(offset);
        ScheduleRequest {
            event_id,
            tenant_id: self.tenant(i),
            occurred_at: Utc::now(),
            causation_id: None,
            correlation_id: None,
            kind: ScheduleRequestKind::Plan,
            job_id: Uuid::from_u64_pair(0x5c4e_d000, i),
            contact_id: format!("c{i}"),
            campaign_id: CAMPAIGN.into(),
            origin: JobOrigin::CampaignEntry,
            earliest_at: Some(earliest),
            requested_at: Some(earliest),
            replaces_job_id: None,
            reason: "campaign_entry".into(),
            reason_detail: None,
            time_zone: Some(ZONE.into()),
            time_zone_source: Some(ZoneSource::Contact),
            windows: Vec::new(),
            attempt: Some(1),
            jurisdictions: Vec::new(),
            jurisdiction_source: None,
            placed_calls: Vec::new(),
        }
    }

    /// The earliest time of the first job: `lead` from now.
    pub fn base(&self) -> DateTime<Utc> {
        let lead = chrono::TimeDelta::from_std(self.lead).unwrap_or(chrono::TimeDelta::zero());
        Utc::now() + lead
    }
}

/// Starts a scheduler instance on its own thread.
pub fn start_instance(
    settings: &KafkaSettings,
    names: &Names,
) -> Result<RunningProcessor, ProcessorError> {
    RunningProcessor::start(
        "scheduler",
        processor(SchedulerConfig::new(&names.topics)),
        spec(&names.topics, &names.app),
        instance_config(settings, &names.app),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(tenants: u64, launches_per_slot: u32) -> Workload {
        Workload {
            tenants,
            launches_per_slot,
            lead: Duration::from_secs(2 * 86_400),
            spread: Duration::from_secs(7 * 86_400),
        }
    }

    #[test]
    fn the_control_file_is_valid_and_names_every_tenant() {
        let w = workload(3, 2);
        let file = ControlFile::parse(&w.control_file()).expect("valid control file");
        assert_eq!(file.tenants.len(), 3);
        assert!(file.tenants.contains_key("bench-t2"));
    }

    #[test]
    fn capacity_is_checked_per_tenant() {
        // 28 days × 624 slots = 17,472 per tenant; 80% is 13,977.
        assert!(workload(10, 1).check_capacity(139_770).is_ok());
        assert!(workload(10, 1).check_capacity(140_000).is_err());
        assert!(workload(10, 2).check_capacity(140_000).is_ok());
    }

    #[test]
    fn requests_are_keyed_by_tenant_and_spread_over_the_span() {
        let w = workload(4, 1);
        let base = Utc::now();
        let r = w.request(5, Uuid::nil(), base);
        assert_eq!(r.tenant_id, "bench-t1");
        let earliest = r.earliest_at.expect("plan requests have an earliest time");
        assert!(earliest >= base && earliest < base + chrono::TimeDelta::days(7));
        assert_ne!(w.request(6, Uuid::nil(), base).job_id, r.job_id);
    }
}
