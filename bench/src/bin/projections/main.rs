//! `cargo xtask bench projections`: the Postgres projections and the
//! operator API (issue 9), in one run on fresh topics and a database of its
//! own (`callstream_bench_projections_<id>`, dropped afterwards), every view on:
//!
//! 1. `throughput`: N preloaded events (the projections tests' workload,
//!    ~7.4 events a contact, every view touched), applied by the live
//!    projections from offset 0: `projection_events_per_s` (target ≥ 20,000).
//! 2. `rebuild`: the same topics rebuilt into new tables and swapped in:
//!    `rebuild_events_per_s` (target ≥ 50,000).
//! 3. `lag`: events produced at 5,000/s while the live projections run;
//!    acknowledgement to offsets stored with the rows, per event:
//!    `projection_lag_p99_ms` (target ≤ 500).
//! 4. `api`: `GET /v1/jobs`, filtered and paged by cursor, over 1,000,000
//!    jobs of one tenant: `api_jobs_p99_ms` (target ≤ 50).
//!
//! The throughput and rebuild phases also report the CPU they took per event:
//! Postgres's (`*_pg_cpu_us_per_event`, the benchmark database's backends and
//! the server's background processes; `*_pg_server_cpu_us_per_event`, the
//! whole server, see `pgcpu`), this process's (the projections themselves,
//! `*_bench_cpu_us_per_event`) and the broker's.
//!
//! Topics are deleted afterwards unless `--keep-topics`; the database is
//! dropped unless `--keep-database`.

mod api;
mod lag;
mod live;
mod pgcpu;
mod throughput;
mod workload;

use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_platform::{admin, KafkaSettings, Topics};
use callstream_projections::{config, ProjectionsConfig, Tables};
use callstream_schemas::AnyEvent;
use chrono::Utc;
use clap::Parser;
use rdkafka::consumer::{BaseConsumer, Consumer};
use tracing::info;

use callstream_bench::kafka::unique_name;
use callstream_bench::report::Report;

use callstream_bench::db::BenchDb;

fn main() -> Result<()> {
    callstream_bench::init("projections", &["callstream_projections"]);
    run(&Args::parse(), &mut Report::stdout("projections"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// Events/s applied by the live projections.
    Throughput,
    /// Events/s of a rebuild of every view.
    Rebuild,
    /// Event commit to row visible, at a steady rate.
    Lag,
    /// `GET /v1/jobs` latency over a big jobs view.
    Api,
}

/// The projections into Postgres and the operator API: events/s applied
/// and rebuilt, lag to a visible row, `GET /v1/jobs` latency.
#[derive(Debug, Parser)]
#[command(name = "projections")]
pub struct Args {
    /// Events of the throughput and rebuild runs.
    #[arg(long, default_value_t = 100_000)]
    events: u64,
    /// Partitions of every topic.
    #[arg(long, default_value_t = callstream_platform::topics::DEFAULT_PARTITIONS)]
    partitions: i32,
    /// Most records in one Postgres transaction (the projections' default).
    #[arg(long, default_value_t = config::DEFAULT_BATCH_RECORDS)]
    batch_records: usize,
    /// Longest a batch waits to fill, ms (the projections' default).
    #[arg(long, default_value_t = config::DEFAULT_BATCH_MAX_WAIT_MS)]
    batch_ms: u64,
    /// Most records a rebuild reads from Kafka at once (the projections' default).
    #[arg(long, default_value_t = config::DEFAULT_REBUILD_BATCH_RECORDS)]
    rebuild_batch_records: usize,
    /// Records a rebuild folds in memory before writing (its chunk), comma-separated: the
    /// rebuild runs once per value, back to back on the same log. The first is reported as
    /// `rebuild_*`, the others as `rebuild_fold_N_*`; the default's second, 2,000, folds no
    /// more than a live batch does and upserts every chunk after the first, as a rebuild
    /// did before it was a bulk load.
    #[arg(long, value_delimiter = ',', default_values_t = [config::DEFAULT_REBUILD_FOLD_RECORDS, 2_000])]
    rebuild_fold_records: Vec<usize>,
    /// Transactions a batch is committed in at once, a share of the views each (the
    /// projections' default).
    #[arg(long, default_value_t = config::DEFAULT_COMMIT_LANES)]
    commit_lanes: usize,
    /// Events per second of the lag run.
    #[arg(long, default_value_t = 5_000)]
    lag_rate: u64,
    /// Seconds of the lag run (after a 2-second warm-up).
    #[arg(long, default_value_t = 20)]
    lag_seconds: u64,
    /// How often the lag run reads `projection_offsets`, ms.
    #[arg(long, default_value_t = 5)]
    lag_poll_ms: u64,
    /// Jobs of the API run's tenant.
    #[arg(long, default_value_t = 1_000_000)]
    api_jobs: u64,
    /// Timed requests of the API run.
    #[arg(long, default_value_t = 2_000)]
    api_requests: usize,
    /// Requests before the timed ones (pools and caches warm up).
    #[arg(long, default_value_t = 100)]
    api_warmup: usize,
    /// Jobs per page.
    #[arg(long, default_value_t = 50)]
    api_page_size: u32,
    /// Pages per session at most (the first and the ones after by cursor).
    #[arg(long, default_value_t = 3)]
    api_pages: u32,
    /// Clients asking at once.
    #[arg(long, default_value_t = 1)]
    api_concurrency: usize,
    /// Which phases to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_values = ["throughput", "rebuild", "lag", "api"])]
    phases: Vec<Phase>,
    /// Most seconds the throughput phase may take before the run fails.
    #[arg(long, default_value_t = 900)]
    timeout_s: u64,
    /// Leave the benchmark's topics in place.
    #[arg(long)]
    keep_topics: bool,
    /// Leave the benchmark's database in place (its name is logged).
    #[arg(long)]
    keep_database: bool,
}

pub fn run(args: &Args, report: &mut Report) -> Result<()> {
    if args.events == 0
        || args.partitions < 1
        || args.batch_records == 0
        || args.rebuild_batch_records == 0
        || args.commit_lanes == 0
        || args.rebuild_fold_records.contains(&0)
    {
        bail!(
            "--events, --partitions, --batch-records, --rebuild-batch-records, --commit-lanes \
             and --rebuild-fold-records must be positive"
        );
    }
    if args.lag_rate == 0 || args.lag_seconds == 0 || args.lag_poll_ms == 0 {
        bail!("--lag-rate, --lag-seconds and --lag-poll-ms must be positive");
    }
    if args.api_jobs == 0 || args.api_requests == 0 || args.api_concurrency == 0 {
        bail!("--api-jobs, --api-requests and --api-concurrency must be positive");
    }
    if !(1..=500).contains(&args.api_page_size) {
        bail!("--api-page-size must be within 1..=500 (the API's limit)");
    }
    let settings = KafkaSettings::from_env("callstream-bench");
    check_broker(&settings)?;
    let database_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| callstream_projections::config::DEFAULT_DATABASE_URL.to_owned());
    // The projections, the API, the lag producer and poller all run here.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-projections")
        .enable_all()
        .build()
        .context("starting a tokio runtime")?;
    let db = runtime.block_on(BenchDb::create(&database_url, "projections"))?;
    info!(database = %db.name, "benchmark database created");
    let topics = Topics {
        prefix: format!("{}.", unique_name("bench-proj")),
        partitions: args.partitions,
        ..Topics::default()
    };
    let made: Vec<String> = topics.specs().into_iter().map(|s| s.name).collect();
    let result = run_phases(args, &runtime, &settings, &db, &topics, report);
    if args.keep_topics {
        info!(prefix = %topics.prefix, "keeping the benchmark topics");
    } else {
        callstream_bench::kafka::delete_topics(&settings, &made);
    }
    if args.keep_database {
        info!(database = %db.name, "keeping the benchmark database");
    } else {
        runtime.block_on(db.drop_database());
    }
    runtime.shutdown_timeout(Duration::from_secs(5));
    result
}

/// Fails early and plainly when the broker is not there.
fn check_broker(settings: &KafkaSettings) -> Result<()> {
    let consumer: BaseConsumer = settings
        .base_config()
        .create()
        .context("creating a Kafka client")?;
    consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .with_context(|| {
            format!(
                "no Kafka broker at {} (is the stack up? `cargo xtask up`)",
                settings.bootstrap_servers
            )
        })?;
    Ok(())
}

/// At least `events` events of the workload, cut to exactly that many;
/// also how many contacts were used.
fn events_of(run: &str, from: usize, events: u64) -> (Vec<AnyEvent>, usize) {
    let wanted = usize::try_from(events).unwrap_or(usize::MAX);
    let base = Utc::now();
    // ~7.4 events a contact: ask for a few more contacts than needed.
    let contacts = wanted / 7 + 1;
    let mut out = workload::workload(run, from, contacts, base);
    out.truncate(wanted);
    (out, contacts)
}

fn run_phases(
    args: &Args,
    runtime: &tokio::runtime::Runtime,
    settings: &KafkaSettings,
    db: &BenchDb,
    topics: &Topics,
    report: &mut Report,
) -> Result<()> {
    runtime
        .block_on(admin::ensure_topics(settings, &topics.specs()))
        .context("creating the topics")?;
    let kafka = KafkaSettings::new(&settings.bootstrap_servers, "callstream-bench-projections");
    let mut config = ProjectionsConfig::new(db.url.clone(), kafka, topics.clone());
    config.batch_max_records = args.batch_records;
    config.batch_max_wait = Duration::from_millis(args.batch_ms);
    config.commit_lanes = args.commit_lanes;
    config.rebuild_batch_records = args.rebuild_batch_records;
    let keys: Vec<String> = config
        .views
        .iter()
        .map(|v| v.offsets_key(Tables::Live))
        .collect();
    report.emit("partitions", f64::from(args.partitions), "partitions")?;
    report.emit("views", config.views.len() as f64, "views")?;
    report.emit("batch_records", args.batch_records as f64, "records")?;
    report.emit("commit_lanes", args.commit_lanes as f64, "lanes")?;
    report.emit(
        "rebuild_batch_records",
        args.rebuild_batch_records as f64,
        "records",
    )?;

    let mut contacts_used = 0;
    if args.phases.contains(&Phase::Throughput) || args.phases.contains(&Phase::Rebuild) {
        let (events, contacts) = events_of("bench", 0, args.events);
        contacts_used = contacts;
        info!(events = events.len(), "loading events");
        let took = live::load(settings, topics, &events)?;
        info!(seconds = took.as_secs_f64(), "loaded");
        report.emit("events", events.len() as f64, "events")?;
    }
    if args.phases.contains(&Phase::Throughput) {
        info!("live projections from offset 0");
        let timeout = Duration::from_secs(args.timeout_s);
        let cpu = CpuWatch::start(&db.name);
        let found = throughput::applied(runtime, &config, args.events, timeout)?;
        cpu.emit(report, "projection", args.events)?;
        report.emit("projection_events_per_s", found.events_per_s, "events/s")?;
        report.emit("projection_seconds", found.seconds, "s")?;
        report.emit("projection_startup_seconds", found.startup_seconds, "s")?;
        report.emit("projection_batches", found.batches as f64, "batches")?;
    }
    if args.phases.contains(&Phase::Rebuild) {
        let mut first_rate = None;
        for (n, &fold) in args.rebuild_fold_records.iter().enumerate() {
            let phase = if n == 0 {
                "rebuild".to_string()
            } else {
                format!("rebuild_fold_{fold}")
            };
            info!(fold_records = fold, "rebuilding every view");
            let mut config = config.clone();
            config.rebuild_fold_records = fold;
            let cpu = CpuWatch::start(&db.name);
            let found = throughput::rebuilt(runtime, &config)?;
            cpu.emit(report, &phase, found.records)?;
            report.emit(&format!("{phase}_fold_records"), fold as f64, "records")?;
            report.emit(
                &format!("{phase}_events_per_s"),
                found.events_per_s,
                "events/s",
            )?;
            report.emit(&format!("{phase}_seconds"), found.seconds, "s")?;
            report.emit(&format!("{phase}_records"), found.records as f64, "records")?;
            // The process's peak so far: a rebuild's chunk is held in memory (run one value
            // alone, first, to read its own).
            if let Some(peak) = callstream_bench::cpu::peak_rss_mib() {
                report.emit(&format!("{phase}_peak_rss_mib"), peak, "MiB")?;
            }
            match first_rate {
                None => first_rate = Some(found.events_per_s),
                Some(first) => report.emit(
                    &format!("rebuild_speedup_over_fold_{fold}"),
                    first / found.events_per_s,
                    "ratio",
                )?,
            }
        }
    }
    if args.phases.contains(&Phase::Lag) {
        let live = live::Live::start(runtime, &config);
        let warmup_events = args.lag_rate * 2;
        let (warmup, used) = events_of("lag", contacts_used, warmup_events);
        let (events, _) = events_of(
            "lag",
            contacts_used + used,
            args.lag_rate * args.lag_seconds,
        );
        let pace = lag::Pace {
            rate_per_s: args.lag_rate,
            poll: Duration::from_millis(args.lag_poll_ms),
        };
        info!(
            rate = args.lag_rate,
            seconds = args.lag_seconds,
            "lag at a steady rate"
        );
        let found = lag::measure(
            runtime, settings, topics, &db.pool, &keys, &live, &warmup, &events, pace,
        );
        live.stop(runtime)?;
        let found = found?;
        let s = found.summary;
        report.emit("projection_lag_p99_ms", s.p99, "ms")?;
        report.emit("projection_lag_p50_ms", s.p50, "ms")?;
        report.emit("projection_lag_max_ms", s.max, "ms")?;
        report.emit("projection_lag_mean_ms", s.mean, "ms")?;
        report.emit("projection_lag_samples", s.count as f64, "events")?;
        report.emit("projection_lag_rate", found.rate_per_s, "events/s")?;
    }
    if args.phases.contains(&Phase::Api) {
        let load = api::Load {
            jobs: args.api_jobs,
            requests: args.api_requests,
            warmup: args.api_warmup,
            page_size: args.api_page_size,
            pages: args.api_pages,
            concurrency: args.api_concurrency,
        };
        info!(jobs = load.jobs, "API over a big jobs view");
        let found = api::measure(runtime, db, settings, topics, load)?;
        let s = found.summary;
        report.emit("api_jobs_p99_ms", s.p99, "ms")?;
        report.emit("api_jobs_p50_ms", s.p50, "ms")?;
        report.emit("api_jobs_max_ms", s.max, "ms")?;
        report.emit("api_jobs_mean_ms", s.mean, "ms")?;
        report.emit("api_requests", s.count as f64, "requests")?;
        report.emit(
            "api_cursor_requests",
            found.cursor_requests as f64,
            "requests",
        )?;
        report.emit("api_jobs", args.api_jobs as f64, "jobs")?;
        report.emit("api_concurrency", args.api_concurrency as f64, "clients")?;
        report.emit("api_insert_seconds", found.insert_seconds, "s")?;
    }
    Ok(())
}

/// CPU of Postgres, this process and the broker over one phase.
struct CpuWatch {
    postgres: Option<pgcpu::Sampler>,
    usage: callstream_bench::cpu::Usage,
}

impl CpuWatch {
    fn start(database: &str) -> Self {
        Self {
            postgres: pgcpu::Sampler::start(database),
            usage: callstream_bench::cpu::Usage::now(),
        }
    }

    /// `{phase}_*_cpu_us_per_event` over `events`; what could not be read is left out.
    fn emit(self, report: &mut Report, phase: &str, events: u64) -> Result<()> {
        let used = callstream_bench::cpu::Usage::now().since(&self.usage);
        let per_event = |seconds: f64| seconds * 1e6 / events.max(1) as f64;
        if let Some(pg) = self.postgres.and_then(pgcpu::Sampler::finish) {
            report.emit(
                &format!("{phase}_pg_cpu_us_per_event"),
                per_event(pg.bench),
                "us",
            )?;
            report.emit(
                &format!("{phase}_pg_server_cpu_us_per_event"),
                per_event(pg.server),
                "us",
            )?;
        }
        if let Some(bench) = used.bench {
            report.emit(
                &format!("{phase}_bench_cpu_us_per_event"),
                per_event(bench),
                "us",
            )?;
        }
        if let Some(broker) = used.broker {
            report.emit(
                &format!("{phase}_broker_cpu_us_per_event"),
                per_event(broker),
                "us",
            )?;
        }
        Ok(())
    }
}
