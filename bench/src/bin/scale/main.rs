//! `cargo xtask bench scale`: scale-out of the contact processor, the scheduler and the
//! completion detector on the three-broker cluster (`cargo xtask up --cluster`), each instance
//! its own `callstream process` (release build), as a deployment runs them.
//!
//! 1. **Throughput per instance count.** For each count in `--instances` (1, 2, 3): every
//!    instance stopped, a backlog preloaded (`--backlog` launch requests, as many accepted
//!    launches and a completion for every other launch), then that many instances of each of
//!    the three started at once. Each processor's rate is the input offsets its group
//!    committed from the instances' start (joining the group and restoring included) to the
//!    moment it had drained its inputs (the scheduler's input is the contact processor's
//!    output, so it drains last); a group has drained when its committed offsets stop moving
//!    and nothing but transaction markers lies past them.
//! 2. **Instances added and removed under a steady load.** Two instances each, `--rate`
//!    launch requests and launches a second for `--steady-seconds`; a third instance of each
//!    joins a third of the way in, and one is SIGKILLed two thirds of the way in (its
//!    partitions move once the group's session times out). The largest lag of each group is
//!    reported, and how long after the load the groups had caught up.
//! 3. **Nothing lost, nothing repeated**, over every input of the run (`check.rs`): metrics
//!    `lost` and `duplicated` (and per processor), which must be 0, else the run fails.
//! 4. **Restores**: every restore an instance logged (`restore finished`, the partitions it
//!    took on and how long their state took to read back), per partition moved.
//!
//! Everything shares this machine's cores with the three brokers; the figures say how the
//! processors scale here, not on a machine with a core per instance.

mod check;
mod fleet;
mod progress;
mod workload;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use callstream_bench::kafka::{block_on, preload, preload_placed, unique_name, Placed};
use callstream_bench::report::{Report, Summary};
use callstream_platform::{admin, topics, KafkaSettings, Topics};
use clap::Parser;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use tracing::info;

use self::check::Inputs;
use self::fleet::{Fleet, Proc, PROCESSORS};
use self::progress::{Position, Probe};
use self::workload::{Phase, Written};

/// Scale-out of the contact processor, scheduler and detector on the three-broker cluster.
#[derive(Debug, Parser)]
#[command(name = "scale")]
struct Args {
    /// Launch requests (and as many launches) preloaded for each instance count.
    #[arg(long, default_value_t = 20_000)]
    backlog: u64,
    /// Instance counts of the backlog steps, in order.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    instances: Vec<u32>,
    /// Launch requests a second (and as many launches) in the steady phase.
    #[arg(long, default_value_t = 200)]
    rate: u64,
    /// Seconds of the steady phase (0 skips it).
    #[arg(long, default_value_t = 60)]
    steady_seconds: u64,
    /// Partitions of every topic.
    #[arg(long, default_value_t = 12)]
    partitions: i32,
    /// The `callstream` binary the instances run.
    #[arg(
        long,
        env = "CALLSTREAM_BIN",
        default_value = "target/release/callstream"
    )]
    bin: PathBuf,
    /// Keep the run's topics (deleted afterwards by default).
    #[arg(long)]
    keep_topics: bool,
}

/// A drain or catch-up may take this long before the run fails.
const PATIENCE: Duration = Duration::from_secs(600);

pub fn unique(prefix: &str) -> String {
    unique_name(prefix)
}

fn main() -> Result<()> {
    callstream_bench::init("scale", &[]);
    let args = Args::parse();
    let settings = KafkaSettings::from_env_checked("bench-scale")
        .context("Kafka client properties from the environment")?;
    let prefix = format!("{}-", unique("scale"));
    let topics = fleet::cluster_topics(&prefix, args.partitions);
    info!(%prefix, bootstrap = %settings.bootstrap_servers, "creating the topics (3 replicas, 2 in sync)");
    block_on(admin::ensure_topics(&settings, &topics.specs()))?
        .context("creating the run's topics (is the cluster up? `cargo xtask up --cluster`)")?;
    let logs = PathBuf::from("target/bench-scale").join(prefix.trim_end_matches('-'));
    let mut fleet = Fleet::new(args.bin.clone(), topics.clone(), logs.clone())?;
    info!(logs = %logs.display(), "instance logs");
    let result = run(&args, &settings, &topics, &mut fleet);
    let stopped = fleet.stop_all();
    if !args.keep_topics {
        delete_run_topics(&settings, &prefix);
    }
    result.and(stopped)
}

fn run(args: &Args, settings: &KafkaSettings, topics: &Topics, fleet: &mut Fleet) -> Result<()> {
    let mut report = Report::stdout("scale");
    let probes = PROCESSORS
        .iter()
        .map(|p| Probe::new(settings, topics, *p))
        .collect::<Result<Vec<_>>>()?;
    let mut inputs = Inputs::default();
    let mut first_rate: Vec<Option<f64>> = vec![None; PROCESSORS.len()];
    for (step, &count) in args.instances.iter().enumerate() {
        let phase = Phase(step as u64 + 1);
        fleet.stop_all()?;
        info!(count, backlog = args.backlog, "preloading a backlog");
        let written = preload_backlog(settings, topics, phase, args.backlog)?;
        inputs.phases.push((phase, written));
        let rates = drain(settings, fleet, &probes, count)?;
        for (i, (proc, drained)) in rates.iter().enumerate() {
            let label = proc.label();
            report.emit(
                &format!("{label}_records_per_s_x{count}"),
                drained.per_s(),
                "records/s",
            )?;
            report.emit(
                &format!("{label}_drain_s_x{count}"),
                drained.drained_after.as_secs_f64(),
                "s",
            )?;
            report.emit(
                &format!("{label}_first_commit_s_x{count}"),
                drained.first_commit.as_secs_f64(),
                "s",
            )?;
            match first_rate[i] {
                None => first_rate[i] = Some(drained.per_s()),
                Some(first) if first > 0.0 => report.emit(
                    &format!("{label}_speedup_x{count}"),
                    drained.per_s() / first,
                    "ratio",
                )?,
                Some(_) => {}
            }
        }
    }
    if args.steady_seconds > 0 {
        let phase = Phase(100);
        let written = steady(args, settings, topics, fleet, &probes, phase, &mut report)?;
        inputs.phases.push((phase, written));
    }

    info!("checking every output against every input");
    let (outcomes, unexpected) = check::check(settings, topics, &inputs, PATIENCE)?;
    let (mut lost, mut duplicated) = (0, 0);
    for (proc, outcome) in &outcomes {
        let label = proc.label();
        report.emit(
            &format!("{label}_inputs_checked"),
            outcome.expected as f64,
            "records",
        )?;
        report.emit(&format!("{label}_lost"), outcome.lost as f64, "records")?;
        report.emit(
            &format!("{label}_duplicated"),
            outcome.duplicated as f64,
            "records",
        )?;
        lost += outcome.lost;
        duplicated += outcome.duplicated;
    }
    report.emit("lost", lost as f64, "records")?;
    report.emit("duplicated", duplicated as f64, "records")?;
    report.emit(
        "completed_launches_reported_missing",
        unexpected as f64,
        "records",
    )?;
    report_restores(fleet, &mut report)?;
    if lost > 0 || duplicated > 0 {
        bail!("{lost} outputs lost and {duplicated} repeated: exactly-once broke under scale-out");
    }
    Ok(())
}

/// Loads one backlog: launch requests, launches and every other launch's completion.
fn preload_backlog(
    settings: &KafkaSettings,
    topics: &Topics,
    phase: Phase,
    backlog: u64,
) -> Result<Written> {
    let now = chrono::Utc::now();
    preload(
        settings,
        &topics.name(topics::CONTACT_COMMANDS),
        backlog,
        |n, key, value| {
            if let Ok((k, v)) = phase.launch_request(n, now) {
                key.extend_from_slice(k.as_bytes());
                value.extend(v);
            }
        },
    )?;
    let now_ms = now.timestamp_millis();
    preload_placed(
        settings,
        &topics.name(topics::CALL_LAUNCHES),
        backlog,
        |n, key, value| {
            // One millisecond a launch, as a dispatcher would accept them.
            let records = phase.launch(n, now_ms + n as i64)?;
            key.extend_from_slice(records.contact.as_bytes());
            value.extend(records.launch.0);
            Ok(Placed {
                partition: None,
                timestamp_ms: Some(records.launch.1),
            })
        },
    )?;
    preload_placed(
        settings,
        &topics.name(topics::CALL_EVENTS),
        backlog.div_ceil(2),
        |i, key, value| {
            let n = i * 2;
            let records = phase.launch(n, now_ms + n as i64)?;
            let (completion, at) = records
                .completion
                .context("an even launch has a completion")?;
            key.extend_from_slice(records.contact.as_bytes());
            value.extend(completion);
            Ok(Placed {
                partition: None,
                timestamp_ms: Some(at),
            })
        },
    )?;
    Ok(Written {
        launch_requests: backlog,
        launches: backlog,
    })
}

/// How one processor drained its backlog.
#[derive(Debug, Clone, Copy)]
struct Drained {
    offsets: i64,
    /// From the instances' start to its first committed progress.
    first_commit: Duration,
    /// From the instances' start to the drain.
    drained_after: Duration,
}

impl Drained {
    /// Offsets a second from the instances' start to the drain: start-up (joining the
    /// group, restoring) included, since a probe every half second cannot time the busy
    /// part of a short drain well.
    fn per_s(&self) -> f64 {
        self.offsets as f64 / self.drained_after.as_secs_f64().max(0.001)
    }
}

/// Starts `count` instances of every processor and waits until each group has committed
/// the ends of its inputs (the scheduler's only once the contact processor is done).
fn drain(
    settings: &KafkaSettings,
    fleet: &mut Fleet,
    probes: &[Probe],
    count: u32,
) -> Result<Vec<(Proc, Drained)>> {
    let before: Vec<Position> = probes.iter().map(Probe::position).collect::<Result<_>>()?;
    let started = Instant::now();
    for proc in PROCESSORS {
        for id in 0..count {
            fleet.start(proc, id)?;
        }
    }
    let mut first: Vec<Option<Duration>> = vec![None; probes.len()];
    let mut done: Vec<Option<(Duration, Position)>> = vec![None; probes.len()];
    let mut last: Vec<Position> = before.clone();
    // When `last` was read: a group found settled had drained by then.
    let mut last_at: Vec<Duration> = vec![Duration::ZERO; probes.len()];
    let mut last_log = Instant::now();
    while done.iter().any(Option::is_none) {
        fleet.check_alive()?;
        if started.elapsed() > PATIENCE {
            bail!("the backlog was not drained within {PATIENCE:?} by {count} instances each");
        }
        let contact_done = done[0].is_some();
        for (i, probe) in probes.iter().enumerate() {
            if done[i].is_some() {
                continue;
            }
            let taken = started.elapsed();
            let now = probe.position()?;
            let moved = now.committed() > before[i].committed();
            if first[i].is_none() && moved {
                first[i] = Some(started.elapsed());
            }
            let upstream_done = probe.proc() != Proc::Scheduler || contact_done;
            if upstream_done && moved && probe.drained(settings, &now, &last[i])? {
                done[i] = Some((last_at[i], now.clone()));
            }
            last[i] = now;
            last_at[i] = taken;
        }
        if last_log.elapsed() > Duration::from_secs(5) {
            last_log = Instant::now();
            let lags: Vec<String> = probes
                .iter()
                .zip(&done)
                .zip(&last)
                .map(|((p, d), now)| match d {
                    Some(_) => format!("{} drained", p.proc().label()),
                    None => format!("{} lag {}", p.proc().label(), now.lag()),
                })
                .collect();
            info!(
                count,
                elapsed_s = started.elapsed().as_secs(),
                "{}",
                lags.join(", ")
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Ok(probes
        .iter()
        .enumerate()
        .filter_map(|(i, probe)| {
            let (at, position) = done[i].as_ref()?;
            let at = *at;
            Some((
                probe.proc(),
                Drained {
                    offsets: position.committed() - before[i].committed(),
                    first_commit: first[i].unwrap_or(at),
                    drained_after: at,
                },
            ))
        })
        .collect())
}

/// The steady phase: two instances each, a third added, one SIGKILLed, under a fixed rate.
fn steady(
    args: &Args,
    settings: &KafkaSettings,
    topics: &Topics,
    fleet: &mut Fleet,
    probes: &[Probe],
    phase: Phase,
    report: &mut Report,
) -> Result<Written> {
    // Two instances of each, ids 0 and 1.
    for proc in PROCESSORS {
        while fleet.count(proc) > 2 {
            let id = u32::try_from(fleet.count(proc) - 1).unwrap_or(0);
            fleet.stop(proc, id)?;
        }
        for id in u32::try_from(fleet.count(proc)).unwrap_or(0)..2 {
            fleet.start(proc, id)?;
        }
    }
    let total = Duration::from_secs(args.steady_seconds);
    let (add_at, kill_at) = (total / 3, total * 2 / 3);
    info!(
        rate = args.rate,
        seconds = args.steady_seconds,
        "steady load: a third instance joins at {add_at:?}, one is SIGKILLed at {kill_at:?}"
    );
    let load = {
        let (settings, topics, rate) = (settings.clone(), topics.clone(), args.rate);
        std::thread::spawn(move || produce_steadily(&settings, &topics, phase, rate, total))
    };
    let started = Instant::now();
    let (mut added, mut killed) = (false, false);
    let mut max_lag = vec![0_i64; probes.len()];
    while !load.is_finished() {
        fleet.check_alive()?;
        if !added && started.elapsed() >= add_at {
            for proc in PROCESSORS {
                fleet.start(proc, 2)?;
            }
            added = true;
        }
        if !killed && started.elapsed() >= kill_at {
            for proc in PROCESSORS {
                fleet.kill(proc, 1)?;
            }
            killed = true;
        }
        for (i, probe) in probes.iter().enumerate() {
            max_lag[i] = max_lag[i].max(probe.position()?.lag());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let written = load
        .join()
        .map_err(|_| anyhow::anyhow!("the steady load's thread panicked"))??;
    let load_ended = Instant::now();
    let mut last: Vec<Position> = vec![Position::default(); probes.len()];
    loop {
        fleet.check_alive()?;
        let positions: Vec<Position> = probes.iter().map(Probe::position).collect::<Result<_>>()?;
        for (i, p) in positions.iter().enumerate() {
            max_lag[i] = max_lag[i].max(p.lag());
        }
        let mut drained = true;
        for ((probe, now), before) in probes.iter().zip(&positions).zip(&last) {
            drained &= probe.drained(settings, now, before)?;
        }
        if drained {
            break;
        }
        last = positions;
        if load_ended.elapsed() > PATIENCE {
            bail!("the groups had not caught up {PATIENCE:?} after the steady load");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    report.emit("steady_input_per_s", args.rate as f64 * 2.5, "records/s")?;
    for (probe, lag) in probes.iter().zip(&max_lag) {
        report.emit(
            &format!("{}_steady_max_lag", probe.proc().label()),
            *lag as f64,
            "offsets",
        )?;
    }
    report.emit(
        "steady_caught_up_after_load_s",
        load_ended.elapsed().as_secs_f64(),
        "s",
    )?;
    Ok(written)
}

/// `rate` launch requests and `rate` launches a second (and every other launch's
/// completion) for `total`, with the durable idempotent producer the gateway uses.
fn produce_steadily(
    settings: &KafkaSettings,
    topics: &Topics,
    phase: Phase,
    rate: u64,
    total: Duration,
) -> Result<Written> {
    let producer: BaseProducer = settings
        .producer_config()
        .create()
        .context("creating the steady load's producer")?;
    let (commands, launches, events) = (
        topics.name(topics::CONTACT_COMMANDS),
        topics.name(topics::CALL_LAUNCHES),
        topics.name(topics::CALL_EVENTS),
    );
    let tick = Duration::from_millis(100);
    let per_tick = (rate / 10).max(1);
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < total {
        let now = chrono::Utc::now();
        for _ in 0..per_tick {
            let (key, value) = phase.launch_request(n, now)?;
            send(
                &producer,
                BaseRecord::to(&commands).key(&key).payload(&value),
            )?;
            let records = phase.launch(n, now.timestamp_millis())?;
            let (launch, at) = &records.launch;
            send(
                &producer,
                BaseRecord::to(&launches)
                    .key(&records.contact)
                    .payload(launch)
                    .timestamp(*at),
            )?;
            if let Some((completion, at)) = &records.completion {
                send(
                    &producer,
                    BaseRecord::to(&events)
                        .key(&records.contact)
                        .payload(completion)
                        .timestamp(*at),
                )?;
            }
            n += 1;
        }
        producer.poll(Duration::ZERO);
        let next = tick * u32::try_from(n / per_tick).unwrap_or(u32::MAX);
        std::thread::sleep(next.saturating_sub(started.elapsed()));
    }
    producer
        .flush(Duration::from_secs(120))
        .context("the steady load's records were not all acknowledged")?;
    Ok(Written {
        launch_requests: n,
        launches: n,
    })
}

fn send(producer: &BaseProducer, mut record: BaseRecord<'_, String, Vec<u8>>) -> Result<()> {
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((
                rdkafka::error::KafkaError::MessageProduction(
                    rdkafka::types::RDKafkaErrorCode::QueueFull,
                ),
                back,
            )) => {
                record = back;
                producer.poll(Duration::from_millis(10));
            }
            Err((error, _)) => return Err(error).context("queueing a steady-load record"),
        }
    }
}

/// Every restore the instances logged: how many, partitions moved, time per partition.
fn report_restores(fleet: &Fleet, report: &mut Report) -> Result<()> {
    let restores: Vec<fleet::Restore> = fleet
        .restores()?
        .into_iter()
        .filter(|r| r.partitions > 0)
        .collect();
    report.emit("restores", restores.len() as f64, "restores")?;
    report.emit(
        "partitions_moved",
        restores.iter().map(|r| r.partitions).sum::<usize>() as f64,
        "partitions",
    )?;
    report.emit(
        "restored_records",
        restores.iter().map(|r| r.records).sum::<u64>() as f64,
        "records",
    )?;
    let per_partition: Vec<f64> = restores
        .iter()
        .map(|r| r.seconds * 1000.0 / r.partitions as f64)
        .collect();
    if let Some(summary) = Summary::of(per_partition) {
        report.emit("restore_ms_per_partition_p50", summary.p50, "ms")?;
        report.emit("restore_ms_per_partition_max", summary.max, "ms")?;
    }
    for proc in PROCESSORS {
        let longest = restores
            .iter()
            .filter(|r| r.proc == proc)
            .map(|r| r.seconds * 1000.0)
            .fold(0.0, f64::max);
        report.emit(
            &format!("{}_longest_restore_ms", proc.label()),
            longest,
            "ms",
        )?;
    }
    Ok(())
}

/// Deletes every topic of the run (the design's and the changelogs the processors made).
fn delete_run_topics(settings: &KafkaSettings, prefix: &str) {
    let names = settings
        .base_config()
        .create::<BaseConsumer>()
        .ok()
        .and_then(|c| c.fetch_metadata(None, Duration::from_secs(10)).ok())
        .map(|m| {
            m.topics()
                .iter()
                .map(|t| t.name().to_owned())
                .filter(|n| n.starts_with(prefix))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    callstream_bench::kafka::delete_topics(settings, &names);
}
