//! The projections' admin listener against the real broker and a fresh database: once a
//! workload has landed, `/readyz` answers 200 and `/metrics` (OpenMetrics) counts what was
//! applied, shows every view caught up, and holds the missing-completion backlog and the
//! open exceptions the views hold.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use callstream_projections::{run_with_telemetry, Stats, Telemetry, View};
use support::events::workload;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `GET path` over HTTP/1.0: the status line's code, the headers and the body.
async fn get(addr: std::net::SocketAddr, path: &str) -> Result<(u16, String, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").as_bytes())
        .await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    let (head, body) = answer.split_once("\r\n\r\n").context("no blank line")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no status")?;
    Ok((status, head.to_lowercase(), body.to_owned()))
}

/// The value of the sample `line_start` (name and labels) in an exposition.
fn sample(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(line_start)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_once_caught_up_with_the_views_counts_on_metrics() -> Result<()> {
    let db = TestDb::new().await?;
    let topics = topics().await?;
    let addr = {
        // A free port (bound and released: the projections bind it again).
        let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
        probe.local_addr()?
    };
    let mut config = config(&db, &topics);
    config.admin_listen = Some(addr);
    let telemetry = Arc::new(Telemetry::new(Arc::new(Stats::default()), 1000));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run_with_telemetry(config, telemetry.clone(), async {
        let _ = stopped.await;
    }));

    let producer = callstream_e2e::producer()?;
    let mut produced = Produced::new();
    let (events, expected) = workload("acme", 30, chrono::Utc::now());
    produce_all(&producer, &topics, &events, &mut produced).await?;
    wait_caught_up(
        &db.pool,
        &topics,
        View::ALL,
        &produced,
        Duration::from_secs(60),
    )
    .await?;

    // The next sample (every 5 s) sees the views caught up.
    let started = Instant::now();
    loop {
        match get(addr, "/readyz").await {
            Ok((200, _, _)) => break,
            other if started.elapsed() > Duration::from_secs(30) => {
                bail!("not ready 30 s after catching up: {other:?}")
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let (status, head, text) = get(addr, "/metrics").await?;
    ensure!(status == 200, "/metrics answered {status}");
    ensure!(
        head.contains("content-type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{head}"
    );
    ensure!(text.ends_with("# EOF\n"), "no # EOF at the end");
    let applied = sample(&text, "callstream_projections_records_applied_total ").unwrap_or(0.0);
    ensure!(
        applied >= events.len() as f64,
        "applied {applied} of {}",
        events.len()
    );
    for view in View::ALL {
        let line = format!("callstream_projections_lag{{view=\"{}\"}} ", view.name());
        let lag = sample(&text, &line).with_context(|| format!("no lag for {view:?}"))?;
        ensure!(lag <= 1000.0, "{view:?} lag {lag}");
    }
    let missing = sample(
        &text,
        r#"callstream_projections_missing_completions{tenant="acme"} "#,
    );
    ensure!(
        missing.unwrap_or(0.0) == expected.missing_open as f64,
        "missing completions {missing:?}, expected {}",
        expected.missing_open
    );
    let open: f64 = text
        .lines()
        .filter(|l| l.starts_with(r#"callstream_projections_open_exceptions{tenant="acme","#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    ensure!(
        open == expected.open_exceptions as f64,
        "open exceptions {open}, expected {}",
        expected.open_exceptions
    );
    ensure!(sample(&text, "callstream_projections_ready ") == Some(1.0));
    ensure!(get(addr, "/healthz").await?.0 == 200);

    let _ = stop.send(());
    task.await??;
    Ok(())
}
