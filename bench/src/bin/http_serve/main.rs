//! What the slow-client limits cost: the same trivial router served by `axum::serve` (how
//! the gateway and the operator API served before issue 15) and by
//! `callstream_platform::http::serve` (header-read and idle watchdog per connection,
//! connection cap), side by side in one run, on loopback.
//!
//! Each server gets the same closed loop: `--connections` kept-alive HTTP/1.1 connections,
//! each sending `GET /` and the next as soon as the answer is in, for `--seconds`, in
//! `--rounds` alternating rounds (so neither always runs on a warmer machine). Prints
//! `requests_per_s` and `p99_ms` for each server and `limited_to_plain_ratio`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use axum::routing::get;
use axum::Router;
use callstream_bench::report::{percentile, Report};
use callstream_platform::http::{self, ServeLimits};
use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Parser)]
#[command(about = "Requests/s of axum::serve and platform::http::serve, side by side")]
struct Args {
    /// Kept-alive connections per server.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Seconds of load per round and server.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Rounds (each runs both servers, alternating which goes first).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nhost: bench\r\n\r\n";

fn router() -> Router {
    Router::new().route("/", get(|| async { "ok" }))
}

/// A server of either kind on a port of its own; the sender stops it.
async fn start(limited: bool) -> Result<(SocketAddr, tokio::sync::oneshot::Sender<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async {
        let _ = stopped.await;
    };
    if limited {
        tokio::spawn(http::serve(
            listener,
            router(),
            ServeLimits::default(),
            shutdown,
            |_| {},
        ));
    } else {
        tokio::spawn(async move {
            axum::serve(listener, router())
                .with_graceful_shutdown(shutdown)
                .await
        });
    }
    Ok((addr, stop))
}

/// Reads one whole answer (headers, then `content-length` bytes) into `buf`.
async fn read_answer(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<()> {
    buf.clear();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end]).context("answer head")?;
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .context("no content-length")?;
            if buf.len() >= end + 4 + length {
                if !buf.starts_with(b"HTTP/1.1 200") {
                    bail!("not a 200: {}", String::from_utf8_lossy(buf));
                }
                return Ok(());
            }
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            bail!("the server closed the connection");
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Closed-loop load on `addr` for `duration`: every request's latency, in ms.
async fn load(addr: SocketAddr, connections: usize, duration: Duration) -> Result<Vec<f64>> {
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::with_capacity(connections);
    for _ in 0..connections {
        tasks.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            let mut buf = Vec::with_capacity(256);
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let started = Instant::now();
                stream.write_all(REQUEST).await?;
                read_answer(&mut stream, &mut buf).await?;
                latencies.push(started.elapsed().as_secs_f64() * 1000.0);
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    Ok(all)
}

#[tokio::main]
async fn main() -> Result<()> {
    callstream_bench::init("http_serve", &[]);
    let args = Args::parse();
    let duration = Duration::from_secs(args.seconds);
    let mut samples: [(Vec<f64>, f64); 2] = [(Vec::new(), 0.0), (Vec::new(), 0.0)];
    for round in 0..args.rounds {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for limited in order {
            let (addr, stop) = start(limited).await?;
            let latencies = load(addr, args.connections, duration).await?;
            let _ = stop.send(());
            let slot = &mut samples[usize::from(limited)];
            slot.1 += latencies.len() as f64 / duration.as_secs_f64();
            slot.0.extend(latencies);
            eprintln!(
                "round {round}: {} done",
                if limited { "limited" } else { "plain" }
            );
        }
    }
    let mut report = Report::stdout("http_serve");
    let rounds = args.rounds as f64;
    let mut rates = [0.0; 2];
    for (limited, (latencies, rate_sum)) in samples.iter_mut().enumerate() {
        let name = if limited == 1 { "limited" } else { "plain" };
        latencies.sort_by(f64::total_cmp);
        rates[limited] = *rate_sum / rounds;
        report.emit(
            &format!("{name}_requests_per_s"),
            rates[limited],
            "requests/s",
        )?;
        let p99 = percentile(latencies, 99.0).context("no requests were answered")?;
        report.emit(&format!("{name}_p99_ms"), p99, "ms")?;
    }
    report.emit("limited_to_plain_ratio", rates[1] / rates[0], "ratio")?;
    Ok(())
}
