//! Nothing lost, nothing repeated: the outputs as a fresh `read_committed` reader finds them,
//! held against every input the benchmark wrote.
//! - contact processor: exactly one `schedule-request` caused by each launch request;
//! - scheduler: exactly one `schedule-event` caused by each of those schedule requests;
//! - detector: exactly one `completion-missing` for each launch no completion followed.
//!
//! `lost` counts inputs without their output; `duplicated` counts outputs beyond the one
//! expected, and records whose (derived, so deterministic) event id is on the topic twice.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use callstream_platform::kafka::{read_spans, ReadToEndContext, Span, SpansRead};
use callstream_platform::{topics, KafkaSettings, Topics};
use callstream_schemas::{CompletionMissing, Event, ScheduleEvent, ScheduleRequest};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::Offset;
use uuid::Uuid;

use crate::fleet::Proc;
use crate::workload::Phase;

/// Every phase's inputs, as counts (ids are derived from phase and number).
#[derive(Debug, Default)]
pub struct Inputs {
    pub phases: Vec<(Phase, crate::workload::Written)>,
}

impl Inputs {
    fn launch_requests(&self) -> HashSet<Uuid> {
        self.phases
            .iter()
            .flat_map(|(p, w)| (0..w.launch_requests).map(|n| p.launch_request_id(n)))
            .collect()
    }

    /// Launch ids, with whether each gets a completion.
    fn launches(&self) -> HashMap<Uuid, bool> {
        self.phases
            .iter()
            .flat_map(|(p, w)| (0..w.launches).map(|n| (p.launch_id(n), Phase::completed(n))))
            .collect()
    }
}

/// What one processor's outputs showed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    pub expected: usize,
    pub lost: usize,
    pub duplicated: usize,
}

/// Counts outputs per cause against the causes expected once each.
fn outcome<'a>(
    expected: &HashSet<Uuid>,
    causes: impl Iterator<Item = Uuid>,
    event_ids: impl Iterator<Item = &'a Uuid>,
) -> Outcome {
    let mut per_cause: HashMap<Uuid, usize> = HashMap::new();
    for cause in causes {
        *per_cause.entry(cause).or_default() += 1;
    }
    let mut seen = HashSet::new();
    let repeated_ids = event_ids.filter(|id| !seen.insert(**id)).count();
    Outcome {
        expected: expected.len(),
        lost: expected
            .iter()
            .filter(|id| !per_cause.contains_key(id))
            .count(),
        duplicated: per_cause
            .values()
            .map(|n| n.saturating_sub(1))
            .sum::<usize>()
            + repeated_ids,
    }
}

/// Reads the outputs (waiting up to `wait` for the last of them) and checks each processor.
/// Also returns how many completed launches were reported missing all the same.
pub fn check(
    settings: &KafkaSettings,
    topics: &Topics,
    inputs: &Inputs,
    wait: Duration,
) -> Result<(Vec<(Proc, Outcome)>, usize)> {
    let requests = inputs.launch_requests();
    let launches = inputs.launches();
    let never: HashSet<Uuid> = launches
        .iter()
        .filter(|(_, completed)| !**completed)
        .map(|(id, _)| *id)
        .collect();
    let started = Instant::now();
    loop {
        let plans: Vec<ScheduleRequest> = read_all(
            settings,
            &topics.name(topics::SCHEDULE_REQUESTS),
            topics.partitions,
        )?;
        let ours: Vec<&ScheduleRequest> = plans
            .iter()
            .filter(|p| p.causation_id.is_some_and(|c| requests.contains(&c)))
            .collect();
        let contact = outcome(
            &requests,
            ours.iter().filter_map(|p| p.causation_id),
            plans.iter().map(|p| &p.event_id),
        );
        let decided: Vec<ScheduleEvent> = read_all(
            settings,
            &topics.name(topics::SCHEDULE_EVENTS),
            topics.partitions,
        )?;
        let plan_ids: HashSet<Uuid> = ours.iter().map(|p| p.event_id).collect();
        let scheduler = outcome(
            &plan_ids,
            decided
                .iter()
                .filter_map(|e| e.causation_id)
                .filter(|c| plan_ids.contains(c)),
            decided.iter().map(|e| &e.event_id),
        );
        let reported: Vec<CompletionMissing> = read_all(
            settings,
            &topics.name(topics::COMPLETION_MISSING),
            topics.partitions,
        )?;
        let detector = outcome(
            &never,
            reported
                .iter()
                .map(|m| m.launch_id)
                .filter(|id| never.contains(id)),
            reported.iter().map(|m| &m.event_id),
        );
        let unexpected = reported
            .iter()
            .filter(|m| launches.get(&m.launch_id) == Some(&true))
            .count();
        let all = [
            (Proc::Contact, contact),
            (
                Proc::Scheduler,
                Outcome {
                    // The scheduler is judged on what reached it: plans lost upstream are the
                    // contact processor's.
                    expected: plan_ids.len(),
                    ..scheduler
                },
            ),
            (Proc::Detector, detector),
        ];
        let complete = all.iter().all(|(_, o)| o.lost == 0) && plan_ids.len() == requests.len();
        if complete || started.elapsed() > wait {
            return Ok((all.to_vec(), unexpected));
        }
        tracing::info!(
            missing_plans = contact.lost,
            missing_decisions = scheduler.lost,
            missing_reports = detector.lost,
            "waiting for the last outputs"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Every record of `topic` a `read_committed` reader finds up to the ends it saw at the start.
fn read_all<E: Event>(settings: &KafkaSettings, topic: &str, partitions: i32) -> Result<Vec<E>> {
    let mut config = settings.consumer_config(&crate::unique("scale-reader"));
    config
        .set("enable.partition.eof", "true")
        .set("fetch.max.bytes", "52428800")
        .set("max.partition.fetch.bytes", "4194304");
    let consumer: BaseConsumer<ReadToEndContext> = config
        .create_with_context(ReadToEndContext)
        .context("creating a reader")?;
    let mut spans = Vec::new();
    for partition in 0..partitions {
        let (_, end) = consumer.fetch_watermarks(topic, partition, Duration::from_secs(30))?;
        spans.push(Span {
            topic: topic.to_string(),
            partition,
            from: Offset::Beginning,
            end,
        });
    }
    let mut out = Vec::new();
    let mut failed = None;
    let read = read_spans(&consumer, &spans, Duration::from_secs(300), |message| {
        match E::decode(message.payload().unwrap_or_default()) {
            Ok(event) => out.push(event),
            Err(e) => failed = Some(e),
        }
        if failed.is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    if let Some(e) = failed {
        return Err(e).with_context(|| format!("decoding a record of {topic}"));
    }
    if read == SpansRead::TimedOut {
        bail!("{topic} was not read to its end within 300 s");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_and_repeated_outputs_are_counted() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let expected: HashSet<Uuid> = [a, b, c].into();
        let ids = [
            Uuid::from_u128(10),
            Uuid::from_u128(11),
            Uuid::from_u128(11),
        ];
        // a once, b twice, c never; one event id on the topic twice.
        let got = outcome(&expected, [a, b, b].into_iter(), ids.iter());
        assert_eq!(
            got,
            Outcome {
                expected: 3,
                lost: 1,
                duplicated: 2
            }
        );
        let clean = outcome(&expected, [a, b, c].into_iter(), ids[..2].iter());
        assert_eq!((clean.lost, clean.duplicated), (0, 0));
    }
}
