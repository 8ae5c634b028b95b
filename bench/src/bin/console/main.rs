//! `cargo xtask bench console`: the operator console's time to first render
//! over a large dataset, on a database of its own
//! (`callstream_bench_console_<id>`, dropped afterwards unless `--keep-db`).
//!
//! 1. `load`: the views bulk-loaded with `INSERT ... SELECT FROM
//!    generate_series` (no Kafka): `--jobs` jobs (1,000,000), `--exceptions`
//!    exceptions (100,000), a launch for every 4 jobs with some missing
//!    completions still open, and today's delivery buckets, for the tenant
//!    `bench`, plus a tenth as many for a tenant `other` (see `load.rs`).
//!    Reports `console_jobs`, `console_exceptions_rows`, `console_load_s`.
//! 2. `server`: the operator API served on a loopback socket
//!    (`axum::serve`, rate limits off), an admin token of `bench`; for each
//!    of Today, Schedule and Exceptions, 10 warm-up requests and then
//!    `--requests` sequential `GET /console/f/<page>` with the token and
//!    `X-Console-Zone: America/Chicago`, each timed from send to the whole
//!    body read; every answer must be a 200 holding the page's content.
//!    Reports `console_<page>_p95_ms` and `console_<page>_p50_ms` (target:
//!    p95 ≤ 300 ms).
//! 3. `browser`: `tests/browser/bench.mjs` in Node with Debian's Chromium
//!    (playwright-core; no browser is downloaded) logs in once through
//!    `/console/login`, then loads each page `--browser-loads` times, timed
//!    from just before the navigation until the content region no longer
//!    says "Loading…". Reports `console_<page>_browser_p95_ms` and
//!    `..._p50_ms` (target: p95 ≤ 1 s).
//!
//! Figures are printed, not asserted. Without node or Chromium the browser
//! part is skipped with a message on stderr, the server figures are still
//! printed, and the run exits non-zero at the end.

mod browser;
mod load;
mod server;

use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_bench::report::{percentile, Report};
use callstream_operator_api::{create_token, Role};
use callstream_platform::{KafkaSettings, Topics};
use clap::Parser;
use tracing::{error, info};

use self::server::{Client, Server, PAGES, ZONE};
use callstream_bench::db::{self, BenchDb};

/// Requests before the timed ones, per page (pools and caches warm up).
const WARMUP: usize = 10;

/// The operator console's time to first render over a large dataset: server
/// time of each page's fragment, and browser time to a filled page.
#[derive(Debug, Parser)]
#[command(name = "console")]
struct Args {
    /// Jobs of the tenant `bench` (the tenant `other` gets a tenth as many).
    #[arg(long, default_value_t = 1_000_000)]
    jobs: u64,
    /// Exceptions of the tenant `bench` (the tenant `other` gets a tenth as many).
    #[arg(long, default_value_t = 100_000)]
    exceptions: u64,
    /// Timed requests per page, after 10 warm-up ones.
    #[arg(long, default_value_t = 200)]
    requests: usize,
    /// Timed browser loads per page (0: no browser run).
    #[arg(long, default_value_t = 30)]
    browser_loads: usize,
    /// Leave the benchmark's database in place (its name is logged).
    #[arg(long)]
    keep_db: bool,
}

fn main() -> Result<()> {
    callstream_bench::init("console", &[]);
    let args = Args::parse();
    if args.jobs == 0 || args.exceptions == 0 || args.requests == 0 {
        bail!("--jobs, --exceptions and --requests must be positive");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-console")
        .enable_all()
        .build()
        .context("starting a tokio runtime")?;
    let result = runtime.block_on(run(&args, &mut Report::stdout("console")));
    runtime.shutdown_timeout(Duration::from_secs(5));
    result
}

async fn run(args: &Args, report: &mut Report) -> Result<()> {
    let database_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| callstream_projections::config::DEFAULT_DATABASE_URL.to_owned());
    info!(
        postgres = db::shown(&database_url),
        "creating the benchmark's database and applying the migrations"
    );
    let db = BenchDb::create(&database_url, "console").await?;
    info!(database = %db.name, "benchmark database created");
    let result = measure(args, &db, report).await;
    if args.keep_db {
        info!(database = %db.name, "keeping the benchmark database (--keep-db)");
    } else {
        info!(database = %db.name, "dropping the benchmark database");
        db.drop_database().await;
    }
    result
}

async fn measure(args: &Args, db: &BenchDb, report: &mut Report) -> Result<()> {
    let jobs = i64::try_from(args.jobs).context("--jobs is too large")?;
    let exceptions = i64::try_from(args.exceptions).context("--exceptions is too large")?;
    info!(
        jobs,
        exceptions, "bulk-loading the views (a minute or two for a million jobs on two cores)"
    );
    let loaded = load::load(&db.pool, jobs, exceptions).await?;
    info!(
        jobs = loaded.jobs,
        exceptions = loaded.exceptions,
        open_exceptions = loaded.open_exceptions,
        launches = loaded.launches,
        open_missing = loaded.open_missing,
        buckets_today = loaded.buckets_today,
        seconds = format!("{:.1}", loaded.seconds),
        "loaded (tenant {})",
        load::TENANT
    );
    report.emit("console_jobs", loaded.jobs as f64, "jobs")?;
    report.emit("console_exceptions_rows", loaded.exceptions as f64, "rows")?;
    report.emit(
        "console_open_exceptions",
        loaded.open_exceptions as f64,
        "rows",
    )?;
    report.emit("console_launches", loaded.launches as f64, "rows")?;
    report.emit("console_load_s", loaded.seconds, "s")?;

    let token = create_token(&db.pool, load::TENANT, Role::Admin, "bench")
        .await
        .context("creating an admin token")?
        .token;
    let bootstrap = std::env::var("KAFKA_BOOTSTRAP_SERVERS")
        .unwrap_or_else(|_| callstream_platform::kafka::DEFAULT_BOOTSTRAP_SERVERS.to_owned());
    let kafka = KafkaSettings::new(bootstrap, "bench-console");
    // Reads never touch Kafka; the prefix keeps any stray command off real topics.
    let topics = Topics::with_prefix(format!("{}.", db.name));
    let server = Server::start(&db.url, kafka, topics).await?;
    info!(url = %server.base_url, "operator API serving the console");
    let outcome = time_pages(args, &server.base_url, &token, report).await;
    server.stop().await;
    outcome
}

/// Nearest-rank p50 and p95 of `samples`.
fn p50_p95(mut samples: Vec<f64>) -> Result<(f64, f64)> {
    samples.sort_by(f64::total_cmp);
    Ok((
        percentile(&samples, 50.0).context("no samples")?,
        percentile(&samples, 95.0).context("no samples")?,
    ))
}

async fn time_pages(args: &Args, base_url: &str, token: &str, report: &mut Report) -> Result<()> {
    let client = Client::new(base_url, token)?;
    for (page, must_hold) in PAGES {
        info!(
            page,
            warmup = WARMUP,
            requests = args.requests,
            zone = ZONE,
            "timing GET /console/f/{page}"
        );
        let (samples, bytes) = client.time(page, must_hold, WARMUP, args.requests).await?;
        let max = samples.iter().copied().fold(0.0, f64::max);
        let (p50, p95) = p50_p95(samples)?;
        info!(
            page,
            p50_ms = format!("{p50:.1}"),
            p95_ms = format!("{p95:.1}"),
            max_ms = format!("{max:.1}"),
            bytes,
            "server time (target p95 ≤ 300 ms)"
        );
        report.emit(&format!("console_{page}_p95_ms"), p95, "ms")?;
        report.emit(&format!("console_{page}_p50_ms"), p50, "ms")?;
    }

    if args.browser_loads == 0 {
        info!("--browser-loads 0: no browser run");
        return Ok(());
    }
    info!(
        loads = args.browser_loads,
        "timing the pages in Chromium (tests/browser/bench.mjs)"
    );
    let times = match browser::measure(base_url, token, args.browser_loads).await {
        Ok(times) => times,
        Err(e) => {
            error!("the browser part did not run: {e:#}");
            eprintln!(
                "console bench: NO BROWSER FIGURES: {e:#}\n\
                 (the server figures above stand; this run fails for want of the browser ones)"
            );
            bail!("the browser part of the console bench did not run: {e:#}");
        }
    };
    for (page, _) in PAGES {
        let samples = times
            .get(page)
            .cloned()
            .with_context(|| format!("bench.mjs gave no times for {page}"))?;
        if samples.len() != args.browser_loads {
            bail!(
                "bench.mjs gave {} times for {page}, not {}",
                samples.len(),
                args.browser_loads
            );
        }
        let (p50, p95) = p50_p95(samples)?;
        info!(
            page,
            p50_ms = format!("{p50:.1}"),
            p95_ms = format!("{p95:.1}"),
            "browser time to a filled page (target p95 ≤ 1000 ms)"
        );
        report.emit(&format!("console_{page}_browser_p95_ms"), p95, "ms")?;
        report.emit(&format!("console_{page}_browser_p50_ms"), p50, "ms")?;
    }
    Ok(())
}
