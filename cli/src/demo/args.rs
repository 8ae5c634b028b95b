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
    /// How long after the run starts the CRM contradicts the leads who opted out in a
    /// call (a launch request saying they may be called again).
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    pub contradict_after: Duration,
    /// Run on a scaled clock this many times faster than real time, so production timings
    /// (75 s slots, a 20-minute completion window) pass in minutes. Every role gets the same
    /// CALLSTREAM_CLOCK; the voice simulator's calls are shortened by the same factor.
    #[arg(long)]
    pub clock_rate: Option<f64>,
    /// Where the scaled clock starts: an RFC 3339 time, or `HH:MM` / `yesterday HH:MM` in US
    /// Central. Kafka refuses records stamped more than an hour ahead of the broker's clock
    /// (`log.message.timestamp.after.max.ms`), so a run's business time should stay behind
    /// real time: a day from `yesterday 00:00` ends at today's midnight.
    #[arg(long, default_value = "yesterday 00:00")]
    pub clock_start: String,
    /// On a scaled clock: the run lasts at least this much business time from the clock's
    /// start (e.g. 24h for a whole day), and jobs due within it are waited for.
    #[arg(long, value_parser = parse_duration)]
    pub business_span: Option<Duration>,
    /// SIGKILL every role but the simulators this many times each, at random moments, and
    /// start it again at once (0: no kills).
    #[arg(long, default_value_t = 0)]
    pub kill_rounds: u32,
    /// Real time between two kills.
    #[arg(long, default_value = "8s", value_parser = parse_duration)]
    pub kill_every: Duration,
    /// Start a role that stops on its own again, as a supervisor would (with a backoff, at
    /// most 8 times a role); without it such a stop ends the run.
    #[arg(long)]
    pub restart_exited: bool,
    /// A second member of this processor kind joins its group for part of the run.
    #[arg(long)]
    pub extra_member: Option<String>,
    /// The CALLSTREAM_CLOCK value of a scaled run (set from the options above at start).
    #[arg(skip)]
    pub clock_setting: Option<String>,
    /// Where the scaled clock started (ms since the epoch).
    #[arg(skip)]
    pub clock_start_ms: Option<i64>,
}

impl DemoArgs {
    /// With `--clock-rate`: the scaled clock's setting, installed as this process's clock and
    /// kept for the roles. Runs before anything reads the time.
    pub fn install_clock(&mut self) -> anyhow::Result<()> {
        let Some(rate) = self.clock_rate else {
            return Ok(());
        };
        use callstream_platform::clock::{Clock as _, SystemClock};
        // The anchor is real time by definition: simulated time reads `start` now.
        let anchor = SystemClock.now_utc();
        let start = clock_start(&self.clock_start, anchor)?;
        let setting = format!(
            "scaled:start={},rate={rate},anchor={}",
            start.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            anchor.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        );
        let clock = callstream_platform::clock::parse(&setting)?;
        if !callstream_platform::clock::install(clock) {
            anyhow::bail!("the process clock was read before --clock-rate could set it");
        }
        self.clock_setting = Some(setting);
        self.clock_start_ms = Some(start.timestamp_millis());
        Ok(())
    }

    /// With `--business-span` on a scaled clock: when the run's business time ends.
    pub fn business_end_ms(&self) -> Option<i64> {
        let span = i64::try_from(self.business_span?.as_millis()).ok()?;
        Some(self.clock_start_ms?.saturating_add(span))
    }
}

/// `--clock-start`: RFC 3339 as given, or `HH:MM` on `today`'s date in US Central, or
/// `yesterday HH:MM` on the day before.
pub fn clock_start(
    text: &str,
    today: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<chrono::DateTime<chrono::Utc>> {
    use chrono::TimeZone as _;
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(at.with_timezone(&chrono::Utc));
    }
    let (days_back, clock) = match text.trim().strip_prefix("yesterday") {
        Some(rest) => (1, rest.trim()),
        None => (0, text.trim()),
    };
    let time = chrono::NaiveTime::parse_from_str(clock, "%H:%M").map_err(|_| {
        anyhow::anyhow!(
            "--clock-start {text:?}: expected an RFC 3339 time, HH:MM or yesterday HH:MM"
        )
    })?;
    let zone = chrono_tz::America::Chicago;
    let date = today.with_timezone(&zone).date_naive() - chrono::Days::new(days_back);
    zone.from_local_datetime(&date.and_time(time))
        .earliest()
        .map(|t| t.with_timezone(&chrono::Utc))
        .ok_or_else(|| anyhow::anyhow!("--clock-start {text}: no such time today in US Central"))
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
    fn the_clock_start_is_rfc_3339_or_a_time_of_today_in_us_central() {
        let today = chrono::DateTime::parse_from_rfc3339("2026-12-04T05:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        // 05:00 UTC is still December 3rd in Chicago (UTC-6).
        let midnight = clock_start("00:00", today).unwrap();
        assert_eq!(midnight.to_rfc3339(), "2026-12-03T06:00:00+00:00");
        let day_before = clock_start("yesterday 08:00", today).unwrap();
        assert_eq!(day_before.to_rfc3339(), "2026-12-02T14:00:00+00:00");
        let given = clock_start("2026-03-10T08:00:00-05:00", today).unwrap();
        assert_eq!(given.to_rfc3339(), "2026-03-10T13:00:00+00:00");
        assert!(clock_start("8am", today).is_err());
    }

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
