//! The same measurement under both framings in one run: Avro single-object encoding (no
//! registry) and the Confluent wire format with ids registered in the stack's schema registry
//! (issue 21: the registry must cost less than 3% of throughput).
//!
//! The framing is chosen once per process (`callstream_schemas::wire::use_confluent_ids`
//! cannot be undone), so a benchmark measures each framing in a child process: it runs its own
//! executable again with `--child-framing FRAMING --child-round N` after its own arguments
//! ([`run_child`]). The child switches itself to that framing ([`adopt`]: for `confluent`,
//! `callstream_schema_registry::install` on the topics it uses, exactly as a service does at
//! start), measures once and prints its result lines tagged with the framing and round; the
//! parent passes them on as they come and, once every round is in, prints a summary
//! ([`summarise`]): the mean of each figure per framing, its spread over the rounds, and
//! `confluent_over_single_object_<metric>` ratios, of the means and of each round.
//!
//! Rounds alternate the order ([`schedule`]: single-object then Confluent, then Confluent then
//! single-object, ...), so a drift over the run (the broker's logs growing, the previous
//! child's topics being deleted) weighs on both framings alike.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use callstream_platform::Topics;
use callstream_schema_registry::{install, RegistryClient};
use callstream_schemas::wire;

use crate::report::{ParsedLine, Report, Tags};

/// Where `cargo xtask bench` puts the stack registry's Confluent-compatible URL.
pub const REGISTRY_URL_ENV: &str = "CALLSTREAM_STACK_REGISTRY_URL";

/// How long a child waits for a registry that does not answer before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// The framing a measurement runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Framing {
    /// Avro single-object encoding: no registry (the default of every service).
    SingleObject,
    /// The Confluent wire format, ids registered in the stack's registry at start.
    Confluent,
}

impl Framing {
    /// Its name in the result lines' `framing` field.
    pub fn label(self) -> &'static str {
        match self {
            Self::SingleObject => "single_object",
            Self::Confluent => "confluent",
        }
    }

    /// Its name on the command line.
    pub fn arg(self) -> &'static str {
        match self {
            Self::SingleObject => "single-object",
            Self::Confluent => "confluent",
        }
    }

    /// The first byte of a record written in this framing.
    fn first_byte(self) -> u8 {
        match self {
            Self::SingleObject => callstream_schemas::MAGIC[0],
            Self::Confluent => wire::CONFLUENT_MAGIC,
        }
    }
}

/// Both framings, single-object first: the default of `--framings`.
pub const BOTH: [Framing; 2] = [Framing::SingleObject, Framing::Confluent];

/// The stack registry's URL, when set (and not empty).
/// A bench's entry: in a framing child (`--child-framing`), `child` with
/// the child's tags on every line; otherwise `run`, the parent.
pub fn main_or_child(
    bench: &'static str,
    child_framing: Option<Framing>,
    child_round: u32,
    child: impl FnOnce(Framing, &mut Report) -> Result<()>,
    run: impl FnOnce(&mut Report) -> Result<()>,
) -> Result<()> {
    match child_framing {
        Some(framing) => {
            let tags = Tags::framing(framing.label()).round(child_round);
            child(framing, &mut Report::stdout(bench).with_tags(tags))
        }
        None => run(&mut Report::stdout(bench)),
    }
}

pub fn registry_url() -> Option<String> {
    std::env::var(REGISTRY_URL_ENV)
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// The framings that can be measured here: all of `wanted`, less Confluent when no registry
/// URL is set, which is said on stderr and in a `confluent_skipped` line (with a `note`).
pub fn available(wanted: &[Framing], report: &mut Report) -> Result<Vec<Framing>> {
    let mut framings: Vec<Framing> = Vec::new();
    for &framing in wanted {
        if !framings.contains(&framing) {
            framings.push(framing);
        }
    }
    if framings.contains(&Framing::Confluent) && registry_url().is_none() {
        let note = format!(
            "{REGISTRY_URL_ENV} is not set: no registry to register the schemas with, so the \
             Confluent-framed runs were skipped (`cargo xtask bench` sets it)"
        );
        tracing::warn!("{note}");
        let tags = Tags {
            note: Some(note),
            ..Tags::framing(Framing::Confluent.label())
        };
        report.emit_tagged("confluent_skipped", 1.0, "flag", &tags)?;
        framings.retain(|f| *f != Framing::Confluent);
    }
    Ok(framings)
}

/// The runs of a comparison, in order: `rounds` rounds of every framing, the order reversed
/// every other round (A B, B A, A B ...).
pub fn schedule(framings: &[Framing], rounds: u32) -> Vec<(u32, Framing)> {
    let mut runs = Vec::new();
    for round in 1..=rounds {
        let mut order = framings.to_vec();
        if round % 2 == 0 {
            order.reverse();
        }
        runs.extend(order.into_iter().map(|framing| (round, framing)));
    }
    runs
}

/// In a child: makes this process write `framing` and checks that it does. For Confluent,
/// registers the value schemas of every Avro topic of `topics` with the stack's registry
/// (`install`, as a service at start) and returns the client, for a processor's value gate.
pub async fn adopt(framing: Framing, topics: &Topics) -> Result<Option<RegistryClient>> {
    let client = match framing {
        Framing::SingleObject => None,
        Framing::Confluent => {
            let url = registry_url().with_context(|| format!("{REGISTRY_URL_ENV} is not set"))?;
            let client = RegistryClient::new(&url)?;
            let ids = install(&client, topics, PATIENCE)
                .await
                .with_context(|| format!("registering the schemas at {url} (is the stack up?)"))?;
            tracing::info!(registry = %url, ids = ids.len(), "writing the Confluent framing");
            Some(client)
        }
    };
    let expected = match framing {
        Framing::SingleObject => wire::Framing::SingleObject,
        Framing::Confluent => wire::Framing::Confluent,
    };
    ensure!(
        wire::framing() == expected,
        "this process writes {:?}, not {framing:?}",
        wire::framing()
    );
    Ok(client)
}

/// Fails unless `value` (a record this process wrote) starts as `framing` writes.
pub fn check_written(framing: Framing, value: &[u8]) -> Result<()> {
    ensure!(
        value.first() == Some(&framing.first_byte()),
        "a record written under {} starts with {:?}",
        framing.label(),
        value.first()
    );
    Ok(())
}

/// Runs this executable with `args` and `--child-framing FRAMING --child-round ROUND`; its
/// result lines go on to `report` as they come and are returned; its stderr is this process's.
/// Fails if it does.
pub fn run_child(
    report: &mut Report,
    args: &[String],
    framing: Framing,
    round: u32,
) -> Result<Vec<ParsedLine>> {
    let exe = std::env::current_exe().context("finding this benchmark's executable")?;
    tracing::info!(framing = framing.label(), round, "starting a child run");
    let mut child = Command::new(&exe)
        .args(args)
        .args(["--child-framing", framing.arg()])
        .args(["--child-round", &round.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let stdout = child.stdout.take().context("the child's stdout")?;
    let mut lines = Vec::new();
    for text in BufReader::new(stdout).lines() {
        let text = text.context("reading the child's result lines")?;
        if text.trim().is_empty() {
            continue;
        }
        report.forward(&text)?;
        match serde_json::from_str::<ParsedLine>(&text) {
            Ok(line) => lines.push(line),
            Err(error) => tracing::warn!(%error, line = %text, "a child's line is not a result"),
        }
    }
    let status = child.wait().context("waiting for the child")?;
    if !status.success() {
        bail!(
            "the {} run of round {round} failed ({status})",
            framing.label()
        );
    }
    Ok(lines)
}

/// The summary of a comparison, from the children's `lines`, for each of `metrics` (each a
/// figure the children print once per run): per framing the mean over the rounds (tagged with
/// the framing, no round) and, with more than one round, `<metric>_spread`, (max - min) / mean;
/// with both framings, `confluent_over_single_object_<metric>` of the means, and of each round
/// (tagged with the round).
pub fn summarise(report: &mut Report, lines: &[ParsedLine], metrics: &[&str]) -> Result<()> {
    for &metric in metrics {
        let of = |framing: Framing| -> Vec<(u32, f64, String)> {
            lines
                .iter()
                .filter(|l| {
                    l.metric == metric && l.tags.framing.as_deref() == Some(framing.label())
                })
                .map(|l| (l.tags.round.unwrap_or(0), l.value, l.unit.clone()))
                .collect()
        };
        let mut means: Vec<Option<f64>> = Vec::new();
        for framing in BOTH {
            let runs = of(framing);
            let Some(unit) = runs.first().map(|r| r.2.clone()) else {
                means.push(None);
                continue;
            };
            let values: Vec<f64> = runs.iter().map(|r| r.1).collect();
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let tags = Tags::framing(framing.label());
            report.emit_tagged(metric, mean, &unit, &tags)?;
            if values.len() > 1 && mean != 0.0 {
                let (low, high) = values
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
                report.emit_tagged(
                    &format!("{metric}_spread"),
                    (high - low) / mean,
                    "ratio",
                    &tags,
                )?;
            }
            means.push(Some(mean));
        }
        let ratio_name = format!("confluent_over_single_object_{metric}");
        if let [Some(single), Some(confluent)] = means[..] {
            if single != 0.0 {
                report.emit(&ratio_name, confluent / single, "ratio")?;
            }
            for (round, single, _) in of(Framing::SingleObject) {
                let paired = of(Framing::Confluent)
                    .into_iter()
                    .find(|c| c.0 == round)
                    .map(|c| c.1);
                if let Some(confluent) = paired.filter(|_| single != 0.0) {
                    let tags = Tags {
                        round: Some(round),
                        ..Tags::default()
                    };
                    report.emit_tagged(&ratio_name, confluent / single, "ratio", &tags)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn rounds_alternate_the_order() {
        use Framing::{Confluent as C, SingleObject as S};
        assert_eq!(
            schedule(&BOTH, 3),
            vec![(1, S), (1, C), (2, C), (2, S), (3, S), (3, C)]
        );
        assert_eq!(schedule(&[C], 2), vec![(1, C), (2, C)]);
        assert!(schedule(&BOTH, 0).is_empty());
    }

    /// A writer whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn child_line(metric: &str, value: f64, framing: Framing, round: u32) -> ParsedLine {
        ParsedLine {
            bench: "b".into(),
            metric: metric.into(),
            value,
            unit: "1/s".into(),
            tags: Tags::framing(framing.label()).round(round),
        }
    }

    #[test]
    fn the_summary_has_means_spreads_and_ratios() {
        let out = Shared::default();
        let mut report = Report::to_writer("b", Box::new(out.clone()));
        let lines = vec![
            child_line("rate", 100.0, Framing::SingleObject, 1),
            child_line("rate", 99.0, Framing::Confluent, 1),
            child_line("rate", 96.0, Framing::Confluent, 2),
            child_line("rate", 104.0, Framing::SingleObject, 2),
            child_line("other", 1.0, Framing::SingleObject, 1),
        ];
        summarise(&mut report, &lines, &["rate", "missing"]).unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let got: Vec<ParsedLine> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let summary: Vec<(&str, f64, Option<&str>, Option<u32>)> = got
            .iter()
            .map(|l| {
                (
                    l.metric.as_str(),
                    l.value,
                    l.tags.framing.as_deref(),
                    l.tags.round,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("rate", 102.0, Some("single_object"), None),
                ("rate_spread", 0.039, Some("single_object"), None),
                ("rate", 97.5, Some("confluent"), None),
                ("rate_spread", 0.031, Some("confluent"), None),
                ("confluent_over_single_object_rate", 0.956, None, None),
                ("confluent_over_single_object_rate", 0.99, None, Some(1)),
                ("confluent_over_single_object_rate", 0.923, None, Some(2)),
            ]
        );
    }
}
