//! Brokers dying under load, on the three-broker cluster (the last test of the cluster phase of
//! `cargo xtask test`). The gateway takes Twilio webhooks and launch requests
//! at a steady rate, while the contact processor and the completion detector run exactly-once
//! on the same topics (3 replicas, `min.insync.replicas=2`, changelogs likewise), and
//! 1. the broker that leads most partitions of `call-events` is SIGKILLed, and restarted;
//! 2. 30 s after it is back in every in-sync replica set, the broker that then leads most
//!    partitions (another one) is SIGKILLed, and restarted;
//! 3. two brokers are SIGKILLed at once: no partition can have two in-sync replicas, so from
//!    the moment both are gone every answer must be 503, never 202; then both restart.
//!
//! Afterwards:
//! - every request answered 202 is on its topic (read back by a fresh `read_committed`
//!   consumer), every other answer is a 503, and the gateway serves again after each loss;
//! - the contact processor wrote exactly one `schedule-request` for every launch request on
//!   `contact-commands` (its causation), none twice;
//! - the detector wrote exactly one `completion-missing` for every accepted launch that no
//!   completion followed, and never two for one launch (nor two `completion-resolved`);
//! - both processors are still running: they rode out the losses without a restart.
//!
//! Records the gateway wrote twice (see below) are counted and reported. It prints one JSON
//! line: the longest stall of the gateway and of each processor's committed output, and how
//! long after each kill each was serving again; it asserts outcomes, never durations.
//!
//! Alone: `cargo xtask up --cluster`, then `cargo xtask test -p callstream-e2e --test
//! broker_death --no-cluster -- --ignored --nocapture`. It starts each broker again with the
//! command line `xtask up --cluster` gave it, and starts only once the cluster takes writes on
//! every partition (an earlier test, or its own last run, may have just killed a broker).
#![allow(clippy::unwrap_used)]

#[path = "../../edges/gateway/tests/support/mod.rs"]
mod gateway;

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use callstream_completion_detector::testkit::accepted_launch;
use callstream_completion_detector::DetectorConfig;
use callstream_contact::ContactConfig;
use callstream_e2e::cluster::{self, busiest_broker, kill_brokers, restart_brokers};
use callstream_e2e::runtime::Running;
use callstream_platform::kafka::{read_spans, Span, SpansRead};
use callstream_platform::topics::{
    CALL_EVENTS, CALL_LAUNCHES, COMPLETION_MISSING, COMPLETION_RESOLVED, CONTACT_COMMANDS,
    SCHEDULE_REQUESTS,
};
use callstream_platform::{KafkaSettings, Topics};
use callstream_runtime::{RuntimeConfig, RuntimeMetrics};
use callstream_schemas::{
    CallEvent, CallLaunch, CompletionMissing, CompletionResolved, ContactCommand,
    ContactCommandKind, Event, ScheduleRequest,
};
use gateway::*;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;
use rdkafka::{Message, Offset, TopicPartitionList};
use uuid::Uuid;

/// Requests a second, each from its own task (a 503 takes the produce timeout to come back).
const RATE: u64 = 40;
const CONTACTS: u64 = 400;
const PARTITIONS: i32 = 6;
/// The detector's window and grace: short, so launches go missing while the brokers die.
const WINDOW_MS: i64 = 5_000;
const GRACE_MS: i64 = 1_000;
/// How long a restarted broker may take to rejoin, and the processors to catch up: a bound
/// for liveness, not a speed (on two loaded cores a broker's JVM alone took over a minute to
/// start, and one took more than 180 s to rejoin every in-sync set).
const LIMIT: Duration = Duration::from_secs(300);

/// What one tick of the load sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A Twilio completion through the gateway, for a contact nobody launched.
    Webhook,
    /// A launch request through the gateway: the contact processor plans it.
    LaunchRequest,
    /// An accepted launch straight onto `call-launches`, then (every other one) its
    /// completion through the gateway: the detector joins them.
    Launch { completed: bool },
}

fn kind(n: u64) -> Kind {
    match n % 8 {
        0 | 4 => Kind::LaunchRequest,
        1 => Kind::Launch { completed: true },
        5 => Kind::Launch { completed: false },
        _ => Kind::Webhook,
    }
}

/// One gateway answer: when its request was sent (from the start), the status, the id of
/// what a 202 accepted.
#[derive(Debug, Clone)]
struct Answer {
    sent: Duration,
    answered: Duration,
    status: StatusCode,
    /// The event id of a webhook, the command id of a launch request.
    id: String,
    launch_request: bool,
    /// The problem's code of a refusal (`kafka_unavailable`, ...).
    code: String,
}

/// What the load did: the gateway's answers, and the launches that reached `call-launches`.
#[derive(Default)]
struct Load {
    answers: Vec<Answer>,
    /// Every launch written, and whether its completion was sent through the gateway.
    launches: HashMap<Uuid, bool>,
    launch_failures: usize,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The pipeline's topics behind `prefix`, as on a cluster: 3 replicas, 2 in sync.
fn cluster_topics(prefix: &str) -> Topics {
    Topics {
        prefix: prefix.into(),
        partitions: PARTITIONS,
        replication_factor: 3,
        min_insync_replicas: 2,
    }
}

/// A processor on the cluster as principal admin, changelogs replicated like the topics,
/// its metrics in `metrics`.
fn on_cluster<'a>(
    kafka: &'a KafkaSettings,
    topics: &'a Topics,
    metrics: &'a Arc<RuntimeMetrics>,
) -> impl FnOnce(&mut RuntimeConfig) + 'a {
    move |c| {
        c.kafka = kafka.clone();
        c.metrics = metrics.clone();
        c.replicate_like(topics);
        c.commit.interval = Duration::from_millis(100);
    }
}

/// Arrival times (from `start`) of the records a live `read_committed` reader sees on
/// `topic`, until `stop` (on a thread of its own: a failed assertion must not leave the
/// runtime waiting for it).
fn watch(
    kafka: &KafkaSettings,
    topic: String,
    start: Instant,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<Duration>> {
    let kafka = kafka.clone();
    std::thread::spawn(move || {
        let group = format!("watch-{}", Uuid::new_v4().simple());
        let consumer: BaseConsumer = kafka.consumer_config(&group).create().unwrap();
        let mut assignment = TopicPartitionList::new();
        for p in 0..PARTITIONS {
            assignment
                .add_partition_offset(&topic, p, Offset::Beginning)
                .unwrap();
        }
        consumer.assign(&assignment).unwrap();
        let mut seen = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            if let Some(Ok(_)) = consumer.poll(Duration::from_millis(100)) {
                seen.push(start.elapsed());
            }
        }
        seen
    })
}

/// Stops the watchers however the test ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The longest time between two arrivals, and per kill how long until the first one after it.
fn stalls(arrivals: &[Duration], kills: &[Duration]) -> (Duration, Vec<i64>) {
    let longest = arrivals
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .max()
        .unwrap_or_default();
    let after = kills
        .iter()
        .map(|k| {
            arrivals
                .iter()
                .find(|a| *a > k)
                .map_or(-1, |a| (*a - *k).as_millis() as i64)
        })
        .collect();
    (longest, after)
}

/// From `since`, how long until the gateway answered 202 again and refused nothing after
/// (the gateway serving again), among the requests answered before `until` (the next kill:
/// a request in flight when it came is that kill's refusal), or `None` if it never was.
fn serving_again(answers: &[Answer], since: Duration, until: Duration) -> Option<Duration> {
    let after: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.sent >= since && a.answered < until)
        .collect();
    let last_refused = after
        .iter()
        .filter(|a| a.status != StatusCode::ACCEPTED)
        .map(|a| a.sent)
        .max();
    match last_refused {
        None => Some(Duration::ZERO),
        Some(at) => after
            .iter()
            .filter(|a| a.sent > at && a.status == StatusCode::ACCEPTED)
            .map(|a| a.sent)
            .min()
            .map(|first| first - since),
    }
}

/// Sends tick `n`'s request(s) and records what happened.
async fn tick(
    n: u64,
    gw: Arc<Gateway>,
    launches: FutureProducer,
    launch_topic: String,
    load: Arc<Mutex<Load>>,
    start: Instant,
) {
    let answer = |reply: Reply, sent: Duration, launch_request: bool| Answer {
        sent,
        answered: start.elapsed(),
        status: reply.status,
        id: if launch_request {
            reply.json["command_id"].as_str().unwrap_or("").to_string()
        } else {
            reply.event_id().to_string()
        },
        launch_request,
        code: reply.code().to_string(),
    };
    match kind(n) {
        Kind::Webhook => {
            let contact = format!("c-{}", n % CONTACTS);
            let request = twilio_request(
                &contact,
                &pairs(&completed(&format!("CA{n}"), "1")),
                TWILIO_TOKEN,
            );
            let sent = start.elapsed();
            let reply = gw.send(request).await;
            load.lock()
                .unwrap()
                .answers
                .push(answer(reply, sent, false));
        }
        Kind::LaunchRequest => {
            let body = format!(
                r#"{{"request_id":"r-{n}","contact_id":"lr-{n}","campaign_id":"spring",
                "contact":{{"phone_number":"+1303555{:04}","time_zone":"America/Denver"}}}}"#,
                n % 10_000
            );
            let sent = start.elapsed();
            let reply = gw.send(launch_request(Some(LAUNCH_TOKEN), &body)).await;
            load.lock().unwrap().answers.push(answer(reply, sent, true));
        }
        Kind::Launch {
            completed: complete,
        } => {
            let contact = format!("d-{n}");
            let launch_id = Uuid::new_v4();
            let call_sid = format!("CA{}", launch_id.simple());
            let launch = accepted_launch(TENANT, &contact, launch_id, &call_sid, now_ms());
            let value = launch.encode().unwrap();
            // The producer retries for two minutes: through every loss in this test.
            let written = launches
                .send(
                    FutureRecord::to(&launch_topic)
                        .key(&contact)
                        .payload(&value),
                    Timeout::After(Duration::from_secs(150)),
                )
                .await;
            if written.is_err() {
                load.lock().unwrap().launch_failures += 1;
                return;
            }
            load.lock().unwrap().launches.insert(launch_id, complete);
            if complete {
                let path = format!(
                    "/v1/webhooks/twilio/{TWILIO_ID}?contact_id={contact}&launch_id={launch_id}"
                );
                let body = callstream_gateway::testkit::form(&pairs(&completed(&call_sid, "1")));
                let sent = start.elapsed();
                let reply = gw.send(signed_twilio(&path, &body, TWILIO_TOKEN)).await;
                load.lock()
                    .unwrap()
                    .answers
                    .push(answer(reply, sent, false));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs `cargo xtask up --cluster`; SIGKILLs its brokers"]
async fn brokers_die_under_load_and_nothing_is_lost_or_repeated() {
    // The runtime's own account (assignments, restores, aborts, replacements) for a failure's
    // log; not the expected noise: clients' connection errors while brokers are dead, the
    // gateway's refusals, webhooks for contacts nobody launched dead-lettered.
    callstream_platform::telemetry::init_tracing(
        "warn,callstream_runtime=info,callstream_runtime::kafka::core::output=error,\
         rdkafka::client=off,callstream_gateway=error,callstream_contact=error",
    );
    let kafka = cluster::settings("admin").unwrap();
    let prefix = format!("death-{}-", Uuid::new_v4().simple());
    let topics = cluster_topics(&prefix);
    // A topic of its own, replicated alike, to see the cluster take writes before the test
    // starts: the cluster phase's earlier tests (and this one's last run) kill brokers too.
    let mut specs = topics.specs();
    let mut probe = specs[0].clone();
    probe.name = format!("{prefix}probe");
    specs.push(probe.clone());
    callstream_platform::admin::ensure_topics(&kafka, &specs)
        .await
        .unwrap();
    cluster::wait_writable(&kafka, &probe.name, PARTITIONS, LIMIT)
        .await
        .unwrap();

    let mut config = config(kafka.clone(), &prefix);
    config.topics = topics.clone();
    config.produce_timeout = Duration::from_secs(3);
    config.readiness_cache = Duration::from_millis(100);
    let gw = Arc::new(Gateway::new(config));

    let (contact_metrics, detector_metrics) = (
        Arc::new(RuntimeMetrics::new("contact")),
        Arc::new(RuntimeMetrics::new("detector")),
    );
    let contact = Running::start(
        callstream_contact::processor(ContactConfig::new(&topics)),
        callstream_contact::spec(&topics, &format!("{prefix}contact")),
        on_cluster(&kafka, &topics, &contact_metrics),
    );
    let detector_config = DetectorConfig {
        topics: topics.clone(),
        default_window_ms: WINDOW_MS,
        default_grace_ms: GRACE_MS,
        bucket_close_delay_ms: WINDOW_MS + GRACE_MS,
        ..DetectorConfig::default()
    };
    let detector = Running::start(
        callstream_completion_detector::processor(detector_config),
        callstream_completion_detector::spec(&topics, &format!("{prefix}detector")),
        on_cluster(&kafka, &topics, &detector_metrics),
    );

    let start = Instant::now();
    let watching = Arc::new(AtomicBool::new(false));
    let _stop_watching = StopOnDrop(watching.clone());
    let planned = watch(
        &kafka,
        topics.name(SCHEDULE_REQUESTS),
        start,
        watching.clone(),
    );
    let missing = watch(
        &kafka,
        topics.name(COMPLETION_MISSING),
        start,
        watching.clone(),
    );

    let load: Arc<Mutex<Load>> = Arc::default();
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let sender = {
        let (gw, load) = (gw.clone(), load.clone());
        let launches: FutureProducer = kafka
            .producer_config()
            .set("message.timeout.ms", "150000")
            .create()
            .unwrap();
        let launch_topic = topics.name(CALL_LAUNCHES);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_millis(1000 / RATE));
            let mut in_flight = Vec::new();
            for n in 0u64.. {
                tokio::select! {
                    _ = ticks.tick() => {}
                    _ = stopped.changed() => break,
                }
                in_flight.push(tokio::spawn(tick(
                    n,
                    gw.clone(),
                    launches.clone(),
                    launch_topic.clone(),
                    load.clone(),
                    start,
                )));
            }
            for task in in_flight {
                task.await.unwrap();
            }
        })
    };

    let topic = topics.name(CALL_EVENTS);
    tokio::time::sleep(Duration::from_secs(5)).await;
    // 1. The busiest broker dies, and comes back.
    let first = busiest_broker(&kafka, &topic, &[]).unwrap();
    let launches = kill_brokers(&[first]).unwrap();
    let first_killed = start.elapsed();
    tokio::time::sleep(Duration::from_secs(10)).await;
    restart_brokers(&launches).unwrap();
    let first_rejoined = cluster::wait_all_in_sync(&kafka, &topic, LIMIT)
        .await
        .unwrap();
    // 2. Thirty seconds after it is back, the busiest of the others.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let second = busiest_broker(&kafka, &topic, &[first]).unwrap();
    let launches = kill_brokers(&[second]).unwrap();
    let second_killed = start.elapsed();
    tokio::time::sleep(Duration::from_secs(10)).await;
    restart_brokers(&launches).unwrap();
    let second_rejoined = cluster::wait_all_in_sync(&kafka, &topic, LIMIT)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    // 3. Two at once: one replica left, below min.insync.replicas everywhere.
    let launches = kill_brokers(&[first, second]).unwrap();
    let both_gone = start.elapsed();
    tokio::time::sleep(Duration::from_secs(8)).await;
    let both_restarted = start.elapsed();
    restart_brokers(&launches).unwrap();
    // With two of three controllers gone no in-sync set shrank, so the metadata says "all in
    // sync" before the brokers are even up: wait for the gateway's own 202 instead.
    let pair_rejoined = cluster::wait_all_in_sync(&kafka, &topic, LIMIT)
        .await
        .unwrap();
    let serving = Instant::now();
    while !load
        .lock()
        .unwrap()
        .answers
        .iter()
        .any(|a| a.sent > both_restarted && a.status == StatusCode::ACCEPTED)
    {
        assert!(
            serving.elapsed() < LIMIT,
            "the gateway did not answer 202 within {LIMIT:?} of the brokers' restart"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.send(true).unwrap();
    sender.await.unwrap();
    let load = std::mem::take(&mut *load.lock().unwrap());
    // Said now rather than after waiting for outputs a stopped processor will never write.
    assert!(!contact.is_finished(), "the contact processor stopped");
    assert!(!detector.is_finished(), "the detector stopped");

    // The gateway: every 202 on its topic, every refusal a 503, none while below min ISR.
    let mut answers = load.answers.clone();
    answers.sort_by_key(|a| a.sent);
    let accepted: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.status == StatusCode::ACCEPTED)
        .collect();
    for a in answers.iter().filter(|a| a.status != StatusCode::ACCEPTED) {
        assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{a:?}");
    }
    let below_min_isr: Vec<&&Answer> = accepted
        .iter()
        .filter(|a| a.sent >= both_gone && a.sent < both_restarted)
        .collect();
    assert!(
        below_min_isr.is_empty(),
        "{} requests sent while only one broker lived were answered 202: {:?}",
        below_min_isr.len(),
        below_min_isr.first()
    );
    for (what, since) in [
        ("first kill", first_killed),
        ("second kill", second_killed),
        ("double kill", both_restarted),
    ] {
        let mut after: HashMap<&str, usize> = HashMap::new();
        for a in answers.iter().filter(|a| a.sent > since) {
            *after.entry(a.code.as_str()).or_default() += 1;
        }
        assert!(
            accepted.iter().any(|a| a.sent > since),
            "the gateway never answered 202 after the {what} ({since:?}; answers since, by \
             code: {after:?})"
        );
    }
    let accepted_ids = |launch_request: bool| -> HashSet<String> {
        accepted
            .iter()
            .filter(|a| a.launch_request == launch_request)
            .map(|a| a.id.clone())
            .collect()
    };
    let (webhook_ids, command_ids) = (accepted_ids(false), accepted_ids(true));
    let all_there = |wanted: &HashSet<String>, ids: &HashMap<String, Vec<(i32, i64)>>| {
        wanted.iter().all(|id| ids.contains_key(id))
    };
    let events = on_topic::<CallEvent>(
        &kafka,
        &topic,
        |e| e.event_id,
        |found| all_there(&webhook_ids, &found.ids),
    )
    .await;
    let commands = on_topic::<ContactCommand>(
        &kafka,
        &topics.name(CONTACT_COMMANDS),
        |c| c.event_id,
        |found| all_there(&command_ids, &found.ids),
    )
    .await;
    let missing_202: Vec<&str> = accepted
        .iter()
        .filter(|a| {
            let landed = if a.launch_request {
                &commands.ids
            } else {
                &events.ids
            };
            !landed.contains_key(&a.id)
        })
        .map(|a| a.id.as_str())
        .collect();
    assert!(
        missing_202.is_empty(),
        "{} answered 202 but not on the topic: {:?}",
        missing_202.len(),
        &missing_202[..missing_202.len().min(5)]
    );
    // A record may land twice: librdkafka's idempotent producer bumps its epoch when a
    // broker's death leaves a request's fate unknown and sends it again under the new one,
    // which the broker cannot tell from a new record; and a request answered 503 may have
    // landed all the same (the voice platform then sends it again). Each copy carries the
    // same id (derived from the request), and the contact processor drops a repeated one:
    // counted and reported here, and the processors' checks below count by id.
    let twice = events.twice() + commands.twice();
    let landed_after_503 = (events.ids.len() + commands.ids.len()).saturating_sub(accepted.len());

    // The contact processor: one schedule request per launch request on the topic.
    let launch_requests: HashSet<String> = commands
        .values
        .iter()
        .filter(|c| c.kind == ContactCommandKind::LaunchRequest)
        .map(|c| c.event_id.to_string())
        .collect();
    let cause = |plan: &ScheduleRequest| plan.causation_id.map(|c| c.to_string());
    let plans = on_topic::<ScheduleRequest>(
        &kafka,
        &topics.name(SCHEDULE_REQUESTS),
        |s| s.event_id,
        |found| {
            let causes: HashSet<String> = found.values.iter().filter_map(cause).collect();
            launch_requests.iter().all(|id| causes.contains(id))
        },
    )
    .await;
    assert_eq!(plans.twice(), 0, "a schedule request written twice");
    let mut plans_per_request: HashMap<String, usize> = HashMap::new();
    for plan in &plans.values {
        *plans_per_request
            .entry(cause(plan).unwrap_or_default())
            .or_default() += 1;
    }
    let unplanned: Vec<&String> = launch_requests
        .iter()
        .filter(|id| plans_per_request.get(*id) != Some(&1))
        .collect();
    if !unplanned.is_empty() {
        let inputs = [topics.name(CONTACT_COMMANDS)];
        report_progress(&kafka, &format!("{prefix}contact"), &inputs);
        eprintln!(
            "contact: dead letters {}, aborts {}, replacements {}",
            contact_metrics.dead_letters.get(),
            contact_metrics.aborts.get(),
            contact_metrics.client_replacements.get()
        );
    }
    assert!(
        unplanned.is_empty(),
        "{} of {} launch requests without exactly one schedule request: {:?}",
        unplanned.len(),
        launch_requests.len(),
        unplanned
            .iter()
            .take(5)
            .map(|id| (id, plans_per_request.get(*id)))
            .collect::<Vec<_>>()
    );

    // The detector: one completion-missing per launch that no completion followed, never two.
    let never_completed: HashSet<Uuid> = load
        .launches
        .iter()
        .filter(|(_, completed)| !**completed)
        .map(|(id, _)| *id)
        .collect();
    let reported = on_topic::<CompletionMissing>(
        &kafka,
        &topics.name(COMPLETION_MISSING),
        |m| m.event_id,
        |found| {
            let launches: HashSet<Uuid> = found.values.iter().map(|m| m.launch_id).collect();
            never_completed.iter().all(|id| launches.contains(id))
        },
    )
    .await;
    let resolved = on_topic::<CompletionResolved>(
        &kafka,
        &topics.name(COMPLETION_RESOLVED),
        |r| r.event_id,
        |_| true,
    )
    .await;
    let mut missing_per_launch: HashMap<Uuid, usize> = HashMap::new();
    for m in &reported.values {
        *missing_per_launch.entry(m.launch_id).or_default() += 1;
    }
    let mut resolved_per_launch: HashMap<Uuid, usize> = HashMap::new();
    for r in &resolved.values {
        *resolved_per_launch.entry(r.launch_id).or_default() += 1;
    }
    let lost: Vec<&Uuid> = never_completed
        .iter()
        .filter(|id| missing_per_launch.get(*id) != Some(&1))
        .collect();
    if !lost.is_empty() {
        explain_lost(&kafka, &topics, &prefix, &lost, &detector_metrics).await;
    }
    assert!(
        lost.is_empty(),
        "{} of {} launches never completed without exactly one completion-missing: {:?}",
        lost.len(),
        never_completed.len(),
        lost.iter()
            .take(5)
            .map(|id| (id, missing_per_launch.get(*id)))
            .collect::<Vec<_>>()
    );
    assert!(
        missing_per_launch.values().all(|n| *n == 1) && reported.twice() == 0,
        "a launch reported missing twice"
    );
    assert!(
        resolved_per_launch.values().all(|n| *n == 1) && resolved.twice() == 0,
        "a launch resolved twice"
    );

    // Both processors rode it out, and stop cleanly.
    watching.store(true, Ordering::SeqCst);
    let (planned, missing) = (planned.join().unwrap(), missing.join().unwrap());
    assert!(!contact.is_finished(), "the contact processor stopped");
    assert!(!detector.is_finished(), "the detector stopped");
    contact.stop().unwrap();
    detector.stop().unwrap();

    let mut longest_stall = Duration::ZERO;
    let mut last = Duration::ZERO;
    for a in &accepted {
        longest_stall = longest_stall.max(a.answered.saturating_sub(last));
        last = last.max(a.answered);
    }
    let kills = [first_killed, second_killed, both_restarted];
    let (contact_stall, contact_after) = stalls(&planned, &kills);
    let (detector_stall, detector_after) = stalls(&missing, &kills);
    let ms = |d: Option<Duration>| d.map_or(-1, |d| d.as_millis() as i64);
    // The first request sent after each kill that was answered 202: when the gateway took
    // writes again at all (the stricter figure above waits for the last refusal).
    let first_202_after = |since: Duration| {
        accepted
            .iter()
            .find(|a| a.sent > since)
            .map_or(-1, |a| (a.sent - since).as_millis() as i64)
    };
    let mut refusals_by_code: HashMap<&str, usize> = HashMap::new();
    // Refusals per 5 s of the run, to see when the gateway refused.
    let mut refusals_per_5s: Vec<usize> = Vec::new();
    for a in answers.iter().filter(|a| a.status != StatusCode::ACCEPTED) {
        *refusals_by_code.entry(a.code.as_str()).or_default() += 1;
        let bucket = (a.sent.as_secs() / 5) as usize;
        if refusals_per_5s.len() <= bucket {
            refusals_per_5s.resize(bucket + 1, 0);
        }
        refusals_per_5s[bucket] += 1;
    }
    println!(
        "{}",
        serde_json::json!({
            "test": "broker_death",
            "requests": answers.len(),
            "accepted": accepted.len(),
            "refused_503": answers.len() - accepted.len(),
            "records_twice_or_more": twice,
            "answered_503_yet_on_topic": landed_after_503,
            "launch_requests": launch_requests.len(),
            "schedule_requests": plans.values.len(),
            "launches": load.launches.len(),
            "launches_not_written": load.launch_failures,
            "launches_never_completed": never_completed.len(),
            "completion_missing": reported.values.len(),
            "completion_resolved": resolved.values.len(),
            "gateway_longest_stall_ms": longest_stall.as_millis() as u64,
            "contact_longest_stall_ms": contact_stall.as_millis() as u64,
            "detector_longest_stall_ms": detector_stall.as_millis() as u64,
            "gateway_serving_again_after_first_kill_ms": ms(serving_again(&answers, first_killed, second_killed)),
            "gateway_serving_again_after_second_kill_ms": ms(serving_again(&answers, second_killed, both_gone)),
            "gateway_serving_again_after_double_kill_restart_ms": ms(serving_again(&answers, both_restarted, Duration::MAX)),
            "gateway_first_202_after_kills_ms": [first_202_after(first_killed), first_202_after(second_killed), first_202_after(both_restarted)],
            "kills_at_s": [first_killed.as_secs(), second_killed.as_secs(), both_gone.as_secs()],
            "refusals_by_code": refusals_by_code,
            "refusals_per_5s": refusals_per_5s,
            "contact_first_output_after_kills_ms": contact_after,
            "detector_first_output_after_kills_ms": detector_after,
            "first_broker_back_in_sync_after_restart_ms": first_rejoined.as_millis() as u64,
            "second_broker_back_in_sync_after_restart_ms": second_rejoined.as_millis() as u64,
            // Not a broker's recovery: the metadata's in-sync sets never shrank (see above).
            "both_in_sync_by_metadata_after_restart_ms": pair_rejoined.as_millis() as u64,
            "killed": [first, second],
            // Clients the cluster refused after losing their state, replaced by the runtime.
            "contact_client_replacements": contact_metrics.client_replacements.get(),
            "detector_client_replacements": detector_metrics.client_replacements.get(),
        })
    );
}

/// What a fresh `read_committed` reader finds on a topic: every distinct record (by
/// partition and offset), and the offsets of each id.
struct OnTopic<E> {
    values: Vec<E>,
    ids: HashMap<String, Vec<(i32, i64)>>,
}

impl<E> OnTopic<E> {
    /// Ids on the topic twice or more.
    fn twice(&self) -> usize {
        self.ids.values().filter(|at| at.len() > 1).count()
    }
}

impl<E: Event> OnTopic<E> {
    /// Everything committed on `topic` by now, read to the end of every partition.
    async fn read(kafka: &KafkaSettings, topic: &str, id: &(impl Fn(&E) -> Uuid + Sync)) -> Self {
        let (kafka, name) = (kafka.clone(), topic.to_string());
        let records = tokio::task::spawn_blocking(move || read_to_end(&kafka, &name))
            .await
            .unwrap();
        // By offset first: a record the reader was handed twice is one record.
        let mut by_offset: HashMap<(i32, i64), E> = HashMap::new();
        for (at, payload) in records {
            by_offset.insert(at, E::decode(&payload).unwrap());
        }
        let mut ids: HashMap<String, Vec<(i32, i64)>> = HashMap::new();
        for (at, value) in &by_offset {
            ids.entry(id(value).to_string()).or_default().push(*at);
        }
        OnTopic {
            values: by_offset.into_values().collect(),
            ids,
        }
    }
}

/// What is on `topic` once `done` holds for it (read again every second), or at [`LIMIT`].
async fn on_topic<E: Event>(
    kafka: &KafkaSettings,
    topic: &str,
    id: impl Fn(&E) -> Uuid + Sync,
    done: impl Fn(&OnTopic<E>) -> bool,
) -> OnTopic<E> {
    let started = Instant::now();
    loop {
        let found = OnTopic::read(kafka, topic, &id).await;
        if done(&found) || started.elapsed() > LIMIT {
            return found;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The high watermark of one partition, asked again while the cluster settles.
fn watermark(consumer: &BaseConsumer, topic: &str, partition: i32) -> i64 {
    let started = Instant::now();
    loop {
        match consumer.fetch_watermarks(topic, partition, Duration::from_secs(10)) {
            Ok((_, high)) => return high,
            Err(e) if started.elapsed() < LIMIT => {
                eprintln!("{topic}/{partition}: no watermark yet ({e}); asking again");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("{topic}/{partition}: no watermark in {LIMIT:?}: {e}"),
        }
    }
}

/// Every record of `topic` a `read_committed` reader sees up to the high watermarks it found
/// at the start: (partition, offset) and payload.
fn read_to_end(kafka: &KafkaSettings, topic: &str) -> Vec<((i32, i64), Vec<u8>)> {
    let group = format!("reader-{}", Uuid::new_v4().simple());
    let consumer: BaseConsumer = kafka.consumer_config(&group).create().unwrap();
    let spans: Vec<Span> = (0..PARTITIONS)
        .map(|partition| Span {
            topic: topic.to_string(),
            partition,
            from: Offset::Beginning,
            end: watermark(&consumer, topic, partition),
        })
        .collect();
    let mut out = Vec::new();
    let read = read_spans(&consumer, &spans, LIMIT, |message| {
        out.push((
            (message.partition(), message.offset()),
            message.payload().unwrap_or_default().to_vec(),
        ));
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(
        read,
        SpansRead::Ended,
        "{topic}: not read to its end in {LIMIT:?}"
    );
    out
}

/// Where the launches the detector never reported are: their partitions and offsets on
/// `call-launches`, the detector's committed offsets and the high watermarks, its counters.
async fn explain_lost(
    kafka: &KafkaSettings,
    topics: &Topics,
    prefix: &str,
    lost: &[&Uuid],
    metrics: &RuntimeMetrics,
) {
    let lost: HashSet<Uuid> = lost.iter().map(|id| **id).collect();
    let (k, name) = (kafka.clone(), topics.name(CALL_LAUNCHES));
    let records = tokio::task::spawn_blocking(move || read_to_end(&k, &name))
        .await
        .unwrap();
    let mut where_lost: HashMap<i32, Vec<i64>> = HashMap::new();
    for ((partition, offset), payload) in records {
        let launch = CallLaunch::decode(&payload).unwrap();
        if lost.contains(&launch.launch_id) {
            where_lost.entry(partition).or_default().push(offset);
        }
    }
    for offsets in where_lost.values_mut() {
        offsets.sort_unstable();
    }
    eprintln!(
        "lost launches by partition of call-launches (offsets): {:?}",
        where_lost
            .iter()
            .map(|(p, o)| (p, o.len(), o.first(), o.last()))
            .collect::<Vec<_>>()
    );
    let inputs = [topics.name(CALL_LAUNCHES), topics.name(CALL_EVENTS)];
    report_progress(kafka, &format!("{prefix}detector"), &inputs);
    eprintln!(
        "detector: dead letters {}, timers fired {}, open timers {}, aborts {}, replacements {}",
        metrics.dead_letters.get(),
        metrics.timers_fired.get(),
        metrics.open_timers.get(),
        metrics.aborts.get(),
        metrics.client_replacements.get()
    );
}

/// Prints a group's committed offset and the high watermark of every partition of `inputs`.
fn report_progress(kafka: &KafkaSettings, group: &str, inputs: &[String]) {
    let consumer: BaseConsumer = kafka.consumer_config(group).create().unwrap();
    for topic in inputs {
        let mut list = TopicPartitionList::new();
        for p in 0..PARTITIONS {
            list.add_partition(topic, p);
        }
        let offsets = consumer
            .committed_offsets(list, Duration::from_secs(10))
            .unwrap();
        for p in 0..PARTITIONS {
            let at = offsets
                .find_partition(topic, p)
                .and_then(|e| e.offset().to_raw());
            let high = watermark(&consumer, topic, p);
            eprintln!("{group} at {topic}/{p}: committed {at:?}, high watermark {high}");
        }
    }
}
