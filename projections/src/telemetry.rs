//! The projections' metrics and health, served by [`serve_admin`] on the admin listener
//! (`/metrics`, `/healthz`, `/readyz`).
//!
//! - Counters of what was applied come from [`Stats`] (read at each scrape, so the
//!   hot path stays a relaxed atomic add) and the batch commit time from its histogram.
//! - Lag per view: for each partition a view reads, the partition's end (its last stable
//!   offset, read in one ListOffsets request a sample) minus the view's stored next
//!   offset, summed. A transaction's commit marker takes an offset too, so a view at rest
//!   can show a record of lag per partition; alert on hundreds, not on one.
//! - What the views hold that an operator is paged for: missing completions not yet
//!   resolved, open exceptions by type, and the last hour's launches by delivery outcome,
//!   per tenant, sampled from the views every [`SAMPLE_INTERVAL`].
//! - Ready once Postgres and Kafka have answered (the partitions are assigned from the
//!   stored offsets), the last sample reached Postgres, and every view is within
//!   `ready_lag` records of the end.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use callstream_platform::KafkaSettings;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};
use sqlx::PgPool;
use tokio::net::TcpListener;

use crate::store::{self, Stats};
use crate::view::{Tables, View};

/// How often the views are sampled for lag and the operator gauges.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(5);

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct ViewLabels {
    view: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct TenantLabels {
    tenant: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct ExceptionLabels {
    tenant: String,
    exception_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct DeliveryLabels {
    tenant: String,
    /// `accepted`, `delivered`, `recovered` or `missing`.
    outcome: &'static str,
}

/// An assigned partition: physical topic, partition, logical topic.
type Assigned = (String, i32, &'static str);

/// A partition's end: (physical topic, partition) -> (logical topic, end offset).
type End = ((String, i32), (&'static str, i64));

/// The projections' metrics and readiness; cheap to share.
#[derive(Debug)]
pub struct Telemetry {
    registry: Registry,
    stats: Arc<Stats>,
    lag: Family<ViewLabels, Gauge>,
    ready: Gauge,
    missing: Family<TenantLabels, Gauge>,
    open_exceptions: Family<ExceptionLabels, Gauge>,
    delivery: Family<DeliveryLabels, Gauge>,
    /// The assigned partitions (physical topic, partition, logical topic), set by the live
    /// loop once Postgres gave the stored offsets and Kafka the topics.
    assigned: Mutex<Option<Vec<Assigned>>>,
    /// Records behind the end a view may be and still count as ready.
    ready_lag: i64,
    /// Label sets the last sample set, so a tenant whose count fell to none is dropped.
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    missing: BTreeSet<TenantLabels>,
    open_exceptions: BTreeSet<ExceptionLabels>,
    delivery: BTreeSet<DeliveryLabels>,
}

/// [`Stats`] read at each scrape.
#[derive(Debug)]
struct StatsCollector(Arc<Stats>);

impl Collector for StatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = &self.0;
        let counters = [
            (
                "records_applied",
                "Records applied to the views (or skipped as already applied) and committed",
                &stats.records,
            ),
            (
                "undecodable_records",
                "Records that are not a callstream event, logged and skipped",
                &stats.undecodable,
            ),
            (
                "unappliable_records",
                "Records Postgres refused for a reason retrying cannot fix, logged and skipped",
                &stats.unappliable,
            ),
            (
                "tombstones",
                "Tombstones read (nothing to apply)",
                &stats.tombstones,
            ),
            ("batches", "Batches committed", &stats.batches),
        ];
        for (name, help, value) in counters {
            let counter = ConstCounter::new(value.load(Ordering::Relaxed));
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        let histogram = &stats.commit_seconds;
        let metric = encoder.encode_descriptor(
            "batch_commit_seconds",
            "Time to apply and commit one batch in one commit lane (Postgres outages included)",
            None,
            histogram.metric_type(),
        )?;
        histogram.encode(metric)
    }
}

impl Telemetry {
    /// Metrics over `stats`; ready when every view is within `ready_lag` records of the end.
    pub fn new(stats: Arc<Stats>, ready_lag: i64) -> Self {
        let mut registry = Registry::with_prefix("callstream_projections");
        registry.register_collector(Box::new(StatsCollector(stats.clone())));
        let telemetry = Self {
            registry: Registry::default(),
            stats,
            lag: Family::default(),
            ready: Gauge::default(),
            missing: Family::default(),
            open_exceptions: Family::default(),
            delivery: Family::default(),
            assigned: Mutex::new(None),
            ready_lag,
            seen: Mutex::new(Seen::default()),
        };
        registry.register(
            "lag",
            "Records of its topics a view has not yet committed, summed over their partitions",
            telemetry.lag.clone(),
        );
        registry.register(
            "ready",
            "1 when connected to Postgres and Kafka and every view is caught up",
            telemetry.ready.clone(),
        );
        registry.register(
            "missing_completions",
            "Launches whose completion is missing and not yet resolved, by tenant",
            telemetry.missing.clone(),
        );
        registry.register(
            "open_exceptions",
            "Exceptions open (not resolved or ignored), by tenant and type",
            telemetry.open_exceptions.clone(),
        );
        registry.register(
            "delivery_last_hour",
            "Launches accepted in the last hour by what became of them, by tenant",
            telemetry.delivery.clone(),
        );
        Self {
            registry,
            ..telemetry
        }
    }

    /// Gives every labelled family one series, so an exposition shows every metric (an
    /// empty family is not encoded at all). For tests that list what is registered.
    pub fn with_example_series(self) -> Self {
        let tenant = || "example".to_owned();
        self.lag
            .get_or_create(&ViewLabels { view: tenant() })
            .set(0);
        self.missing
            .get_or_create(&TenantLabels { tenant: tenant() })
            .set(0);
        self.open_exceptions
            .get_or_create(&ExceptionLabels {
                tenant: tenant(),
                exception_type: tenant(),
            })
            .set(0);
        self.delivery
            .get_or_create(&DeliveryLabels {
                tenant: tenant(),
                outcome: "accepted",
            })
            .set(0);
        self
    }

    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// OpenMetrics text.
    pub fn encode(&self) -> String {
        callstream_platform::metrics::encode(&self.registry)
    }

    pub fn is_ready(&self) -> bool {
        self.ready.get() == 1
    }

    pub(crate) fn set_assigned(&self, partitions: Vec<Assigned>) {
        if let Ok(mut assigned) = self.assigned.lock() {
            *assigned = Some(partitions);
        }
    }

    fn assigned(&self) -> Option<Vec<Assigned>> {
        self.assigned.lock().ok().and_then(|a| a.clone())
    }

    /// One sample of the views; a failure (Postgres or Kafka away) makes the projections
    /// not ready and keeps the last values.
    pub async fn sample(&self, pool: &PgPool, views: &[View], ends: Option<&PartitionEnds>) {
        let ready = match self.read_views(pool, views, ends).await {
            Ok(caught_up) => caught_up,
            Err(error) => {
                tracing::debug!(%error, "sampling the views failed");
                false
            }
        };
        self.ready.set(i64::from(ready));
    }

    /// Samples the views; whether every view is caught up (and the partitions assigned).
    async fn read_views(
        &self,
        pool: &PgPool,
        views: &[View],
        ends: Option<&PartitionEnds>,
    ) -> Result<bool, SampleError> {
        self.sample_operator_gauges(pool).await?;
        let (Some(assigned), Some(ends)) = (self.assigned(), ends) else {
            return Ok(false);
        };
        let keys: Vec<String> = views.iter().map(|v| v.offsets_key(Tables::Live)).collect();
        let stored = {
            let mut conn = pool.acquire().await?;
            store::read_offsets(&mut conn, &keys).await?
        };
        let watermarks = ends.read(assigned).await?;
        let lags = lags(views, &keys, &stored, &watermarks);
        let mut caught_up = true;
        for (view, lag) in lags {
            caught_up &= lag <= self.ready_lag;
            self.lag.get_or_create(&ViewLabels { view }).set(lag);
        }
        Ok(caught_up)
    }

    async fn sample_operator_gauges(&self, pool: &PgPool) -> Result<(), SampleError> {
        let missing: Vec<(String, i64)> = sqlx::query_as(
            "SELECT tenant_id, count(*) FROM launches
             WHERE missing_at IS NOT NULL AND resolution IS NULL GROUP BY tenant_id",
        )
        .fetch_all(pool)
        .await?;
        let exceptions: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT tenant_id, exception_type, count(*) FROM exceptions
             WHERE status = 'open' GROUP BY tenant_id, exception_type",
        )
        .fetch_all(pool)
        .await?;
        let delivery: Vec<(String, i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT tenant_id, sum(accepted)::bigint, sum(delivered)::bigint,
                    sum(recovered)::bigint, sum(missing)::bigint
             FROM delivery_buckets WHERE bucket_start >= now() - interval '1 hour'
             GROUP BY tenant_id",
        )
        .fetch_all(pool)
        .await?;
        let Ok(mut seen) = self.seen.lock() else {
            return Ok(());
        };
        let missing = missing
            .into_iter()
            .map(|(tenant, n)| (TenantLabels { tenant }, n))
            .collect();
        replace(&self.missing, &mut seen.missing, missing);
        let exceptions = exceptions
            .into_iter()
            .map(|(tenant, kind, n)| {
                let labels = ExceptionLabels {
                    tenant,
                    exception_type: kind,
                };
                (labels, n)
            })
            .collect();
        replace(&self.open_exceptions, &mut seen.open_exceptions, exceptions);
        let delivery = delivery
            .into_iter()
            .flat_map(|(tenant, accepted, delivered, recovered, missing)| {
                [
                    ("accepted", accepted),
                    ("delivered", delivered),
                    ("recovered", recovered),
                    ("missing", missing),
                ]
                .map(|(outcome, n)| {
                    let labels = DeliveryLabels {
                        tenant: tenant.clone(),
                        outcome,
                    };
                    (labels, n)
                })
            })
            .collect();
        replace(&self.delivery, &mut seen.delivery, delivery);
        Ok(())
    }
}

/// Lag per view name: the end offset minus the stored next offset (0 if none is stored),
/// summed over every partition whose topic the view reads.
fn lags(
    views: &[View],
    keys: &[String],
    stored: &store::Offsets,
    ends: &[End],
) -> Vec<(String, i64)> {
    views
        .iter()
        .zip(keys)
        .map(|(view, key)| {
            let lag = ends
                .iter()
                .filter(|(_, (logical, _))| view.topics().contains(logical))
                .map(|((topic, partition), (_, end))| {
                    let next = stored
                        .get(&(key.clone(), topic.clone(), *partition))
                        .copied()
                        .unwrap_or(0);
                    (end - next).max(0)
                })
                .sum();
            (view.name().to_owned(), lag)
        })
        .collect()
}

/// Why a sample failed.
#[derive(Debug, thiserror::Error)]
enum SampleError {
    #[error("postgres: {0}")]
    Postgres(#[from] sqlx::Error),
    #[error("kafka: {0}")]
    Kafka(#[from] KafkaError),
    #[error("the end-offset lookup stopped")]
    Stopped,
}

/// Reads the end offsets (the last stable offset, as a `read_committed` reader sees them)
/// of many partitions in one ListOffsets request, on a consumer of its own that joins no
/// group, so the live consumer is never blocked by it.
pub struct PartitionEnds {
    consumer: Arc<BaseConsumer>,
}

impl PartitionEnds {
    /// `None` (logged) if the client cannot be created: the lag is then not reported.
    pub fn new(kafka: &KafkaSettings) -> Option<Self> {
        let group = format!("{}-lag-unused-group", kafka.client_id);
        match kafka.consumer_config(&group).create::<BaseConsumer>() {
            Ok(consumer) => Some(Self {
                consumer: Arc::new(consumer),
            }),
            Err(error) => {
                tracing::warn!(%error, "cannot create the client that reads end offsets; no lag metric");
                None
            }
        }
    }

    async fn read(&self, partitions: Vec<Assigned>) -> Result<Vec<End>, SampleError> {
        let consumer = self.consumer.clone();
        tokio::task::spawn_blocking(move || {
            let mut list = TopicPartitionList::new();
            for (topic, partition, _) in &partitions {
                // A "time" of -1 asks ListOffsets for the end of the partition.
                list.add_partition_offset(topic, *partition, Offset::End)?;
            }
            let ends = consumer.offsets_for_times(list, END_OFFSETS_TIMEOUT)?;
            let logical: HashMap<(&str, i32), &'static str> = partitions
                .iter()
                .map(|(t, p, l)| ((t.as_str(), *p), *l))
                .collect();
            Ok(ends
                .elements()
                .iter()
                .filter_map(|e| {
                    let Offset::Offset(end) = e.offset() else {
                        return None;
                    };
                    let logical = logical.get(&(e.topic(), e.partition()))?;
                    Some(((e.topic().to_owned(), e.partition()), (*logical, end)))
                })
                .collect())
        })
        .await
        .map_err(|_| SampleError::Stopped)?
    }
}

const END_OFFSETS_TIMEOUT: Duration = Duration::from_secs(10);

/// Sets `family` to `values`, removing the series the last sample set and this one has not.
fn replace<L>(family: &Family<L, Gauge>, seen: &mut BTreeSet<L>, values: BTreeMap<L, i64>)
where
    L: Clone + Ord + std::hash::Hash + Eq + EncodeLabelSet + std::fmt::Debug,
{
    for gone in seen.iter().filter(|l| !values.contains_key(*l)) {
        family.remove(gone);
    }
    for (labels, value) in &values {
        family.get_or_create(labels).set(*value);
    }
    *seen = values.into_keys().collect();
}

/// The admin routes: `/metrics`, `/healthz` (the process answers), `/readyz` (see the module).
pub fn admin(telemetry: Arc<Telemetry>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(t): State<Arc<Telemetry>>| async move {
                callstream_platform::metrics::response(t.encode())
            }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(t): State<Arc<Telemetry>>| async move {
                if t.is_ready() {
                    (StatusCode::OK, "ready")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "not ready")
                }
            }),
        )
        .with_state(telemetry)
}

/// Serves [`admin`] on `listener` until `shutdown` resolves.
pub async fn serve_admin(
    listener: TcpListener,
    telemetry: Arc<Telemetry>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), callstream_platform::http::ServeError> {
    callstream_platform::http::serve(
        listener,
        admin(telemetry),
        callstream_platform::http::ServeLimits::default(),
        shutdown,
        |addr| tracing::info!(%addr, "projections admin listener (/metrics, /readyz) listening"),
    )
    .await
}
