//! What every benchmark shares: the JSON-line output and the percentile math.
//!
//! One line per measured value, `{"bench":..,"metric":..,"value":..,"unit":..}`,
//! flushed as soon as it is known, so a run that fails late still leaves the
//! numbers it had. Values are rounded to three decimals; a value that is not
//! a finite number is refused rather than printed as `null`.
//!
//! A line may carry [`Tags`] after those four fields: `framing` (`single_object` or
//! `confluent`: which framing the figure was measured under), `round` (which of a
//! comparison's repeated runs it is from) and `note` (why something was not measured).
//! Lines without them are exactly as before.

use std::io::Write;

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// One result line.
#[derive(Debug, Serialize, PartialEq)]
pub struct Line<'a> {
    pub bench: &'a str,
    pub metric: &'a str,
    pub value: f64,
    pub unit: &'a str,
    #[serde(flatten)]
    pub tags: Tags,
}

/// What a line may say besides its value; each is left out of the JSON when unset.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Tags {
    /// The framing the figure was measured under (`single_object`, `confluent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framing: Option<String>,
    /// Which round of a repeated comparison the figure is from (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// Why something was not measured, for whoever reads the lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Tags {
    /// Of a figure measured under `framing`.
    pub fn framing(framing: &str) -> Self {
        Self {
            framing: Some(framing.to_string()),
            ..Self::default()
        }
    }

    /// The same, of round `round`.
    pub fn round(self, round: u32) -> Self {
        Self {
            round: Some(round),
            ..self
        }
    }
}

/// A result line as read back (from a child process's output).
#[derive(Debug, Clone, serde::Deserialize, PartialEq)]
pub struct ParsedLine {
    pub bench: String,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    #[serde(flatten)]
    pub tags: Tags,
}

/// Writes the result lines of one benchmark.
pub struct Report {
    bench: &'static str,
    /// Added to every line [`emit`](Self::emit) writes.
    tags: Tags,
    out: Box<dyn Write>,
}

impl Report {
    /// Results of `bench` on stdout (the only thing a benchmark prints there).
    pub fn stdout(bench: &'static str) -> Self {
        Self::to_writer(bench, Box::new(std::io::stdout()))
    }

    pub fn to_writer(bench: &'static str, out: Box<dyn Write>) -> Self {
        Self {
            bench,
            tags: Tags::default(),
            out,
        }
    }

    /// Every line from now on carries `tags` (a child process's framing and round).
    pub fn with_tags(mut self, tags: Tags) -> Self {
        self.tags = tags;
        self
    }

    /// Prints one result and logs it on stderr too, for whoever watches the run.
    pub fn emit(&mut self, metric: &str, value: f64, unit: &str) -> Result<()> {
        let tags = self.tags.clone();
        self.emit_tagged(metric, value, unit, &tags)
    }

    /// [`emit`](Self::emit) with `tags` instead of the report's own.
    pub fn emit_tagged(&mut self, metric: &str, value: f64, unit: &str, tags: &Tags) -> Result<()> {
        let json = tagged_line(self.bench, metric, value, unit, tags)?;
        self.write(&json)?;
        tracing::info!(
            bench = self.bench,
            metric,
            value,
            unit,
            framing = tags.framing.as_deref(),
            round = tags.round,
            "result"
        );
        Ok(())
    }

    /// Passes on a line as it is (one a child process printed).
    pub fn forward(&mut self, json: &str) -> Result<()> {
        self.write(json)
    }

    fn write(&mut self, json: &str) -> Result<()> {
        writeln!(self.out, "{json}").context("writing a result line")?;
        self.out.flush().context("flushing the result lines")
    }
}

/// The JSON text of one result line.
pub fn line(bench: &str, metric: &str, value: f64, unit: &str) -> Result<String> {
    tagged_line(bench, metric, value, unit, &Tags::default())
}

/// [`line`] with tags after the four fields.
pub fn tagged_line(
    bench: &str,
    metric: &str,
    value: f64,
    unit: &str,
    tags: &Tags,
) -> Result<String> {
    if !value.is_finite() {
        bail!("{bench}/{metric} is not a finite number ({value}); refusing to report it");
    }
    let value = (value * 1000.0).round() / 1000.0;
    serde_json::to_string(&Line {
        bench,
        metric,
        value,
        unit,
        tags: tags.clone(),
    })
    .context("encoding a result line")
}

/// The nearest-rank percentile `p` (0 < p ≤ 100) of `sorted` (ascending):
/// the smallest sample such that at least `p`% of the samples are ≤ it. It
/// is always one of the samples, never an interpolation. `None` when empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(p > 0.0 && p <= 100.0) {
        return None;
    }
    let n = sorted.len();
    // ceil(p/100 * n) as a 1-based rank, kept within 1..=n against rounding.
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// The usual summary of a latency sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub min: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Summary {
    /// Summarises `samples` (any order); `None` when there are none or one is NaN.
    pub fn of(mut samples: Vec<f64>) -> Option<Self> {
        if samples.iter().any(|s| s.is_nan()) {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        let count = samples.len();
        Some(Self {
            count,
            min: *samples.first()?,
            p50: percentile(&samples, 50.0)?,
            p99: percentile(&samples, 99.0)?,
            max: *samples.last()?,
            mean: samples.iter().sum::<f64>() / count as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nearest_rank_percentiles() {
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        let cases: &[(&[f64], f64, Option<f64>)] = &[
            (&[], 50.0, None),
            (&[7.0], 50.0, Some(7.0)),
            (&[7.0], 99.0, Some(7.0)),
            (&[1.0, 2.0], 50.0, Some(1.0)),
            (&[1.0, 2.0], 51.0, Some(2.0)),
            (&[1.0, 2.0, 3.0, 4.0], 75.0, Some(3.0)),
            (&hundred, 99.0, Some(99.0)),
            (&hundred, 99.5, Some(100.0)),
            (&hundred, 100.0, Some(100.0)),
            (&hundred, 0.0, None),
            (&hundred, 101.0, None),
        ];
        for (samples, p, expected) in cases {
            assert_eq!(
                percentile(samples, *p),
                *expected,
                "p{p} of {} samples",
                samples.len()
            );
        }
    }

    #[test]
    fn lines_are_the_documented_json() {
        let text = line("runtime", "eos_records_per_s", 51234.56789, "records/s").unwrap();
        assert_eq!(
            text,
            r#"{"bench":"runtime","metric":"eos_records_per_s","value":51234.568,"unit":"records/s"}"#
        );
        assert!(line("runtime", "x", f64::NAN, "ms").is_err());
        assert!(line("runtime", "x", f64::INFINITY, "ms").is_err());
    }

    #[test]
    fn tags_follow_the_four_fields_and_read_back() {
        let tags = Tags::framing("confluent").round(2);
        let text = tagged_line("gateway", "accepted_per_s", 1.5, "events/s", &tags).unwrap();
        assert_eq!(
            text,
            r#"{"bench":"gateway","metric":"accepted_per_s","value":1.5,"unit":"events/s","framing":"confluent","round":2}"#
        );
        let parsed: ParsedLine = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (parsed.metric.as_str(), parsed.value),
            ("accepted_per_s", 1.5)
        );
        assert_eq!(parsed.tags, tags);
        let untagged: ParsedLine =
            serde_json::from_str(&line("gateway", "lost", 0.0, "events").unwrap()).unwrap();
        assert_eq!(untagged.tags, Tags::default());
    }

    #[test]
    fn summary_of_an_unsorted_sample() {
        let summary = Summary::of(vec![5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((summary.count, summary.min, summary.max), (5, 1.0, 5.0));
        assert_eq!((summary.p50, summary.p99, summary.mean), (3.0, 5.0, 3.0));
        assert_eq!(Summary::of(Vec::new()), None);
        assert_eq!(Summary::of(vec![1.0, f64::NAN]), None);
    }

    proptest! {
        #[test]
        fn a_percentile_is_a_sample_and_grows_with_p(
            mut samples in proptest::collection::vec(-1e6f64..1e6, 1..200),
            p in 0.01f64..100.0,
            q in 0.01f64..100.0,
        ) {
            samples.sort_by(f64::total_cmp);
            let (low, high) = if p <= q { (p, q) } else { (q, p) };
            let at_low = percentile(&samples, low).unwrap();
            let at_high = percentile(&samples, high).unwrap();
            prop_assert!(samples.contains(&at_low));
            prop_assert!(at_low <= at_high);
            // At least p% of the samples are at or below the p-th percentile.
            let at_or_below = samples.iter().filter(|s| **s <= at_low).count();
            prop_assert!(at_or_below as f64 >= low / 100.0 * samples.len() as f64 - 1e-9);
        }
    }
}
