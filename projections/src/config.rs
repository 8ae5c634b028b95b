//! Configuration of the projections, from the environment (with the dev stack's defaults).

use std::net::SocketAddr;
use std::time::Duration;

use callstream_platform::{KafkaSettings, SettingError, Settings, Topics};

use crate::error::ProjectionError;
use crate::view::View;

/// Everything [`run`](crate::run) and [`rebuild`](crate::rebuild) need.
#[derive(Debug, Clone)]
pub struct ProjectionsConfig {
    /// Postgres holding the views (`DATABASE_URL`; default the dev stack's
    /// `postgres://postgres@127.0.0.1:5432/callstream`).
    pub database_url: String,
    /// Kafka cluster (`KAFKA_BOOTSTRAP_SERVERS`); client id `callstream-projections`.
    pub kafka: KafkaSettings,
    /// Topic names (`CALLSTREAM_TOPIC_PREFIX`, ...).
    pub topics: Topics,
    /// The views to keep up to date (`CALLSTREAM_PROJECTIONS_VIEWS`, comma-separated names;
    /// default all).
    pub views: Vec<View>,
    /// Most records applied in one Postgres transaction
    /// (`CALLSTREAM_PROJECTIONS_BATCH_RECORDS`, default 2000).
    pub batch_max_records: usize,
    /// Most records a rebuild reads from Kafka at once
    /// (`CALLSTREAM_PROJECTIONS_REBUILD_BATCH_RECORDS`, default 20000).
    pub rebuild_batch_records: usize,
    /// Most records a rebuild holds and folds in memory before it writes them: the log is
    /// rebuilt in chunks of this many, the first written with `COPY` into the empty tables,
    /// later ones merged by upserts (`CALLSTREAM_PROJECTIONS_REBUILD_FOLD_RECORDS`, default
    /// 500000, under 1 KB of memory each while held). A log that fits in one chunk is all
    /// copied (57,800 events/s in `cargo xtask bench projections`); the upserted chunks after
    /// it run at about 35,000/s, so the default is as large as a rebuild can afford.
    pub rebuild_fold_records: usize,
    /// Transactions a batch is committed in at once, each for a share of the views on a
    /// connection of its own (`CALLSTREAM_PROJECTIONS_COMMIT_LANES`, default 4; 1 commits
    /// every view in one transaction). Each view's rows still commit with its own offsets.
    /// Four (jobs, timeline, launches, the rest) applied 27,800 events/s against 25,500 with
    /// two, three runs each interleaved on two cores (`cargo xtask bench projections --
    /// --phases throughput --events 300000 --commit-lanes 2|3|4`): with more lanes a lane
    /// that finishes its share early leaves less of the batch to wait for.
    pub commit_lanes: usize,
    /// Longest a batch waits to fill before it is applied
    /// (`CALLSTREAM_PROJECTIONS_BATCH_MS`, default 50: at 5,000 events/s the lag bench's
    /// p99 went from 139 ms at 100 to 106 ms; a busy log fills batches long before).
    pub batch_max_wait: Duration,
    /// First wait before retrying a batch while Postgres is away; doubles up to
    /// `retry_max` (`CALLSTREAM_PROJECTIONS_RETRY_MS`, default 200).
    pub retry_initial: Duration,
    /// Longest wait between retries (`CALLSTREAM_PROJECTIONS_RETRY_MAX_MS`, default 5000).
    pub retry_max: Duration,
    /// How often new topics and partitions are looked for
    /// (`CALLSTREAM_PROJECTIONS_METADATA_MS`, default 30000).
    pub metadata_interval: Duration,
    /// Apply the migrations in `migrations/` at start (`CALLSTREAM_PROJECTIONS_MIGRATE`,
    /// default true).
    pub migrate: bool,
    /// Where `/metrics`, `/healthz` and `/readyz` are served
    /// (`CALLSTREAM_PROJECTIONS_ADMIN_LISTEN`, default `127.0.0.1:9403` from the
    /// environment; `none` or unset in [`ProjectionsConfig::new`]: not served).
    pub admin_listen: Option<SocketAddr>,
    /// Records of lag (summed over a view's partitions) a view may have and still count
    /// as ready (`CALLSTREAM_PROJECTIONS_READY_LAG`, default 1000).
    pub ready_lag: i64,
}

/// Where the admin listener binds unless told otherwise: loopback, its own port.
pub const DEFAULT_ADMIN_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9403);

/// Commit lanes unless told otherwise (see [`ProjectionsConfig::commit_lanes`]).
pub const DEFAULT_COMMIT_LANES: usize = 4;

/// See [`ProjectionsConfig::batch_max_records`].
pub const DEFAULT_BATCH_RECORDS: usize = 2000;

/// See [`ProjectionsConfig::batch_max_wait`], in ms.
pub const DEFAULT_BATCH_MAX_WAIT_MS: u64 = 50;

/// See [`ProjectionsConfig::rebuild_batch_records`].
pub const DEFAULT_REBUILD_BATCH_RECORDS: usize = 20_000;

/// See [`ProjectionsConfig::rebuild_fold_records`].
pub const DEFAULT_REBUILD_FOLD_RECORDS: usize = 500_000;

/// The dev stack's database.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/callstream";

impl ProjectionsConfig {
    /// Defaults for a database and topics (tests set the fields they need).
    pub fn new(database_url: impl Into<String>, kafka: KafkaSettings, topics: Topics) -> Self {
        Self {
            database_url: database_url.into(),
            kafka,
            topics,
            views: View::ALL.to_vec(),
            batch_max_records: DEFAULT_BATCH_RECORDS,
            rebuild_batch_records: DEFAULT_REBUILD_BATCH_RECORDS,
            rebuild_fold_records: DEFAULT_REBUILD_FOLD_RECORDS,
            commit_lanes: DEFAULT_COMMIT_LANES,
            batch_max_wait: Duration::from_millis(DEFAULT_BATCH_MAX_WAIT_MS),
            retry_initial: Duration::from_millis(200),
            retry_max: Duration::from_secs(5),
            metadata_interval: Duration::from_secs(30),
            migrate: true,
            admin_listen: None,
            ready_lag: 1000,
        }
    }

    /// Reads the settings named on the fields.
    pub fn from_env() -> Result<Self, ProjectionError> {
        let settings = Settings::env();
        let config_error = |e: SettingError| ProjectionError::Config(e.to_string());
        let database_url = settings
            .database_url(DEFAULT_DATABASE_URL)
            .map_err(config_error)?;
        let topics = settings.topics().map_err(config_error)?;
        let kafka = KafkaSettings::from_env_checked("callstream-projections")
            .map_err(|e| ProjectionError::Config(e.to_string()))?;
        let mut config = Self::new(database_url, kafka, topics);
        if let Some(list) = settings.get("CALLSTREAM_PROJECTIONS_VIEWS") {
            config.views = parse_views(&list)?;
        }
        // Counts of at least one: 0 would stall a batch or commit nothing.
        let count = |name, default: usize| {
            let n = settings
                .number(name, u64::try_from(default).unwrap_or(u64::MAX))
                .map_err(config_error)?;
            Ok::<_, ProjectionError>(usize::try_from(n.max(1)).unwrap_or(usize::MAX))
        };
        config.batch_max_records = count(
            "CALLSTREAM_PROJECTIONS_BATCH_RECORDS",
            config.batch_max_records,
        )?;
        config.rebuild_batch_records = count(
            "CALLSTREAM_PROJECTIONS_REBUILD_BATCH_RECORDS",
            config.rebuild_batch_records,
        )?;
        config.rebuild_fold_records = count(
            "CALLSTREAM_PROJECTIONS_REBUILD_FOLD_RECORDS",
            config.rebuild_fold_records,
        )?;
        config.commit_lanes = count("CALLSTREAM_PROJECTIONS_COMMIT_LANES", config.commit_lanes)?;
        let millis = |name, default| settings.millis(name, default).map_err(config_error);
        config.batch_max_wait = millis("CALLSTREAM_PROJECTIONS_BATCH_MS", config.batch_max_wait)?;
        config.retry_initial = millis("CALLSTREAM_PROJECTIONS_RETRY_MS", config.retry_initial)?;
        config.retry_max = millis("CALLSTREAM_PROJECTIONS_RETRY_MAX_MS", config.retry_max)?;
        config.metadata_interval = millis(
            "CALLSTREAM_PROJECTIONS_METADATA_MS",
            config.metadata_interval,
        )?;
        if let Some(v) = settings.get("CALLSTREAM_PROJECTIONS_MIGRATE") {
            config.migrate = !matches!(v.trim(), "0" | "false" | "no" | "off");
        }
        config.admin_listen = match settings.get("CALLSTREAM_PROJECTIONS_ADMIN_LISTEN") {
            None => Some(DEFAULT_ADMIN_LISTEN),
            Some(v) if matches!(v.trim(), "" | "none" | "off") => None,
            Some(v) => Some(v.trim().parse().map_err(|_| {
                ProjectionError::Config(format!(
                    "CALLSTREAM_PROJECTIONS_ADMIN_LISTEN={v:?}: not an address such as 127.0.0.1:9403"
                ))
            })?),
        };
        let ready_lag = settings
            .number("CALLSTREAM_PROJECTIONS_READY_LAG", 1000)
            .map_err(config_error)?;
        config.ready_lag = i64::try_from(ready_lag).unwrap_or(i64::MAX);
        Ok(config)
    }
}

/// Parses a comma-separated list of view names; empty means all.
pub fn parse_views(list: &str) -> Result<Vec<View>, ProjectionError> {
    let mut views: Vec<View> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .map_err(|e: crate::view::UnknownView| ProjectionError::Config(e.to_string()))
        })
        .collect::<Result<_, _>>()?;
    if views.is_empty() {
        views = View::ALL.to_vec();
    }
    views.sort_unstable();
    views.dedup();
    Ok(views)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_lists_parse_dedupe_and_default_to_all() {
        let cases: &[(&str, Option<Vec<View>>)] = &[
            ("", Some(View::ALL.to_vec())),
            ("jobs", Some(vec![View::Jobs])),
            (" slots , jobs,jobs ", Some(vec![View::Jobs, View::Slots])),
            ("jobs,nope", None),
        ];
        for (input, expected) in cases {
            assert_eq!(parse_views(input).ok(), *expected, "{input:?}");
        }
    }
}
