//! The options of `callstream demo`, and the duration syntax they use.

use std::path::PathBuf;
use std::time::Duration;

/// `callstream demo`.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// Contacts the workload sends to the gateway's launch intake.
    #[arg(long, default_value_t = 2_000)]
    pub contacts: usize,
    /// Stop waiting for the pipeline to settle after this long (e.g. 15m, 120s).
    #[arg(long, default_value = "15m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Leave everything running after the summary, until Ctrl-C.
    #[arg(long)]
    pub keep_running: bool,
    /// The folder with demo.env, gateway.toml and control.toml (default: ./demo).
    #[arg(long)]
    pub demo_dir: Option<PathBuf>,
    /// A control file instead of the demo folder's control.toml.
    #[arg(long)]
    pub control: Option<PathBuf>,
    /// Where the roles' logs go (default: <repo>/.stack/demo/<run id>).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// Launch requests sent in the same second, per burst.
    #[arg(long, default_value_t = 500)]
    pub burst: usize,
    /// Seed of the workload.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// How often a progress line is printed.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub progress_every: Duration,
    /// Jobs due within this long after the workload is sent are waited for; later ones are
    /// reported as waiting.
    #[arg(long, default_value = "150s", value_parser = parse_duration)]
    pub lookahead: Duration,
    /// When the CRM outage starts, after the workload starts.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    pub crm_outage_after: Duration,
    /// How long the CRM is down (0s: no outage).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub crm_outage_for: Duration,
    /// The campaign an operator pauses mid-run (its due jobs are held, then re-planned).
    #[arg(long, default_value = "fall-intake")]
    pub pause_campaign: String,
    /// When the pause starts, after the workload starts.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub pause_after: Duration,
    /// How long the campaign stays paused (0s: no pause).
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub pause_for: Duration,
    /// Put every lead in this time zone (IANA name), or `auto`: one where it
    /// is mid-afternoon now, so every lead can be called during the run.
    #[arg(long)]
    pub lead_zone: Option<String>,
    /// Delete the run's topics and drop its database after the summary
    /// (after Ctrl-C with --keep-running).
    #[arg(long, alias = "delete-topics")]
    pub clean_up: bool,
}

/// Parses `500ms`, `90s`, `2m`, `1h`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale_ms) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1_000)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3_600_000)
    } else {
        (t, 1_000)
    };
    number
        .trim()
        .parse::<u64>()
        .map(|n| Duration::from_millis(n.saturating_mul(scale_ms)))
        .map_err(|_| format!("{text:?} is not a duration (like 500ms, 90s, 2m, 1h)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_with_their_unit() {
        let cases = [
            ("500ms", Some(500)),
            ("90s", Some(90_000)),
            ("2m", Some(120_000)),
            ("1h", Some(3_600_000)),
            ("45", Some(45_000)),
            (" 3s ", Some(3_000)),
            ("soon", None),
            ("-1s", None),
        ];
        for (text, ms) in cases {
            assert_eq!(
                parse_duration(text).ok().map(|d| d.as_millis() as u64),
                ms,
                "{text:?}"
            );
        }
    }
}
