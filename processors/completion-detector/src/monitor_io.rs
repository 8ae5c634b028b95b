//! The delivery monitor's I/O: counting on the contact partitions, sending
//! a bucket's counts when it closes, summing them on the tenant's partition
//! and evaluating the bucket (see `monitor` for the rules).

use callstream_runtime::{Context, Output, ProcessError, Record};
use callstream_schemas::AlertStatus;

use crate::contact_io::arm;
use crate::emit::{self, AlertFacts};
use crate::monitor::{
    bucket_key, bucket_start, evaluate, parse_bucket_key, Aggregate, AlertChange, AlertState,
    BucketCounts, Partial,
};
use crate::processor::{
    Detector, AGGREGATES_STORE, AGGREGATE_TIMER, ALERTS_STORE, BUCKETS_STORE, BUCKET_TIMER,
};
use crate::state::Launch;

fn corrupt(what: &str, error: impl std::fmt::Display) -> ProcessError {
    ProcessError::Invalid(format!("corrupt {what}: {error}"))
}

impl Detector {
    fn load_counts(ctx: &Context<'_>, key: &[u8]) -> Result<Option<BucketCounts>, ProcessError> {
        ctx.get(BUCKETS_STORE, key)
            .map(BucketCounts::decode)
            .transpose()
            .map_err(|e| corrupt("bucket counts", e))
    }

    /// Counts an accepted launch in its tenant's bucket (by acceptance time).
    pub(crate) fn count_launch(&mut self, ctx: &mut Context<'_>, launch: &Launch, now_ms: i64) {
        let start = bucket_start(launch.accepted_at_ms, self.monitor.bucket_ms);
        let key = bucket_key(&launch.tenant_id, start);
        let existing = match Self::load_counts(ctx, &key) {
            Ok(counts) => counts,
            Err(error) => {
                tracing::error!(%error, tenant = %launch.tenant_id, "bucket counts dropped");
                None
            }
        };
        let mut counts = match existing {
            Some(counts) => counts,
            None => {
                let tenant =
                    self.windows
                        .window(ctx, &launch.tenant_id, None, self.default_window());
                let delay = self
                    .config
                    .bucket_close_delay_ms
                    .max(tenant.window_ms + tenant.grace_ms);
                let close_at_ms = start + self.monitor.bucket_ms + delay;
                if close_at_ms <= now_ms {
                    // The bucket was evaluated already: a launch this old
                    // (a replayed dispatcher backlog) would only skew it.
                    return;
                }
                arm(ctx, BUCKET_TIMER, &key, Some(close_at_ms));
                BucketCounts {
                    close_at_ms,
                    ..BucketCounts::default()
                }
            }
        };
        counts.launches += 1;
        ctx.put(BUCKETS_STORE, key, counts.encode());
    }

    /// Counts a completion the platform delivered within the window.
    pub(crate) fn count_delivered(&mut self, ctx: &mut Context<'_>, launch: &Launch) {
        let start = bucket_start(launch.accepted_at_ms, self.monitor.bucket_ms);
        let key = bucket_key(&launch.tenant_id, start);
        if let Ok(Some(mut counts)) = Self::load_counts(ctx, &key) {
            counts.delivered += 1;
            ctx.put(BUCKETS_STORE, key, counts.encode());
        }
    }

    /// The bucket closed on this partition: send its counts to the tenant's partition.
    pub(crate) fn close_bucket(
        &mut self,
        ctx: &mut Context<'_>,
        key: &[u8],
    ) -> Result<(), ProcessError> {
        arm(ctx, BUCKET_TIMER, key, None);
        let Some(counts) = Self::load_counts(ctx, key)? else {
            return Ok(());
        };
        ctx.delete(BUCKETS_STORE, key.to_vec());
        let (tenant_id, bucket_start_ms) =
            parse_bucket_key(key).ok_or_else(|| corrupt("bucket key", "unparsable"))?;
        let partial = Partial {
            tenant_id,
            bucket_start_ms,
            bucket_ms: self.monitor.bucket_ms,
            partition: ctx.partition(),
            launches: counts.launches,
            delivered: counts.delivered,
            close_at_ms: counts.close_at_ms,
        };
        let value = serde_json::to_vec(&partial).map_err(|e| corrupt("partial", e))?;
        ctx.emit(Output::new(
            &self.names.partials,
            partial.tenant_id.as_bytes().to_vec(),
            value,
        ));
        Ok(())
    }

    fn load_alert(ctx: &Context<'_>, tenant: &str) -> Result<AlertState, ProcessError> {
        Ok(ctx
            .get_json::<AlertState>(ALERTS_STORE, tenant.as_bytes())
            .map_err(|e| corrupt("alert state", e))?
            .unwrap_or_default())
    }

    /// A partition's counts for a closed bucket, summed on the tenant's partition.
    pub(crate) fn on_partial(
        &mut self,
        ctx: &mut Context<'_>,
        record: &Record,
    ) -> Result<(), ProcessError> {
        let value = record.value.as_deref().unwrap_or_default();
        let partial: Partial =
            serde_json::from_slice(value).map_err(|e| ProcessError::Decode(e.to_string()))?;
        let alert = Self::load_alert(ctx, &partial.tenant_id)?;
        if partial.bucket_start_ms <= alert.last_evaluated_ms {
            tracing::warn!(tenant = %partial.tenant_id, bucket = partial.bucket_start_ms,
                partition = partial.partition, "bucket counts arrived after the bucket was evaluated");
            return Ok(());
        }
        let key = bucket_key(&partial.tenant_id, partial.bucket_start_ms);
        let mut aggregate = ctx
            .get_json::<Aggregate>(AGGREGATES_STORE, &key)
            .map_err(|e| corrupt("aggregate", e))?
            .unwrap_or_else(|| Aggregate {
                evaluate_at_ms: partial.close_at_ms + self.config.settle_ms,
                ..Aggregate::default()
            });
        if aggregate.add(&partial) {
            arm(ctx, AGGREGATE_TIMER, &key, Some(aggregate.evaluate_at_ms));
            ctx.put_json(AGGREGATES_STORE, key, &aggregate)
                .map_err(|e| corrupt("aggregate", e))?;
        }
        Ok(())
    }

    /// Evaluates a tenant's bucket once every partition had time to report.
    pub(crate) fn evaluate_bucket(
        &mut self,
        ctx: &mut Context<'_>,
        key: &[u8],
    ) -> Result<(), ProcessError> {
        arm(ctx, AGGREGATE_TIMER, key, None);
        let Some(aggregate) = ctx
            .get_json::<Aggregate>(AGGREGATES_STORE, key)
            .map_err(|e| corrupt("aggregate", e))?
        else {
            return Ok(());
        };
        ctx.delete(AGGREGATES_STORE, key.to_vec());
        let (tenant, start) =
            parse_bucket_key(key).ok_or_else(|| corrupt("bucket key", "unparsable"))?;
        let mut alert = Self::load_alert(ctx, &tenant)?;
        if start <= alert.last_evaluated_ms {
            return Ok(());
        }
        alert.last_evaluated_ms = start;
        let change = evaluate(&tenant, start, &aggregate, &mut alert, &self.monitor);
        tracing::info!(tenant = %tenant, bucket = start, launches = aggregate.launches,
            delivered = aggregate.delivered, "delivery bucket closed");
        if let Some(change) = change {
            let (alert_id, rate, status) = match change {
                AlertChange::Raised { alert_id, rate } => (alert_id, rate, AlertStatus::Raised),
                AlertChange::Resolved { alert_id, rate } => (alert_id, rate, AlertStatus::Resolved),
            };
            tracing::warn!(tenant = %tenant, %alert_id, status = %status, rate, "delivery alert");
            let event = emit::alert(AlertFacts {
                tenant: &tenant,
                alert_id,
                status,
                bucket_start_ms: start,
                bucket_ms: self.monitor.bucket_ms,
                launches: aggregate.launches,
                delivered: aggregate.delivered,
                rate,
                threshold: self.monitor.threshold,
                now_ms: self.clocks(ctx).now_ms,
            });
            if let Some(output) =
                callstream_kit::emit::output_or_log(&self.names.alerts, &tenant, &event)
            {
                ctx.emit(output);
            }
        }
        ctx.put_json(ALERTS_STORE, tenant.into_bytes(), &alert)
            .map_err(|e| corrupt("alert state", e))?;
        Ok(())
    }
}
