//! The detector on the runtime: decodes its three inputs, runs the join of
//! the record's contact (or a stage of the delivery monitor), and turns what
//! happened into records, state and timers, all in the record's transaction.
//!
//! Clocks: every deadline is one durable timer of either clock
//! (`TimeDomain::Either`), so it fires when stream time passes it
//! (deterministic, replay-safe) or when the wall clock does (a quiet
//! partition emits on time), whichever is first. One
//! exception keeps restarts honest: while a partition is consuming a
//! backlog (stream time more than `lag_tolerance` behind the wall clock),
//! wall-clock deadlines wait for stream time, so completions that are merely
//! still in the backlog are not reported missing.

use callstream_kit::keys::contact_key;
use std::borrow::Cow;
use std::collections::HashMap;

use callstream_platform::topics;
use callstream_runtime::{Context, ProcessError, Processor, Record, TimeDomain, Timer};
use callstream_schemas::LaunchStatus;

use crate::config::DetectorConfig;
use crate::control::{Window, Windows};
use crate::inputs::Inputs;
use crate::join::{Clocks, JoinSettings};
use crate::monitor::MonitorSettings;
use crate::state::{Completion, Launch};
use crate::DELIVERY_PARTIALS;

/// Store of the join state, one entry per contact.
pub const CONTACTS_STORE: &str = "contacts";
/// Store of stage-1 bucket counts, per tenant and bucket.
pub const BUCKETS_STORE: &str = "buckets";
/// Store of stage-2 aggregates, per tenant and bucket.
pub const AGGREGATES_STORE: &str = "aggregates";
/// Store of alert states, per tenant.
pub const ALERTS_STORE: &str = "alerts";
/// Every store the detector declares (`Processor::stores`).
pub const STORES: &[&str] = &[
    CONTACTS_STORE,
    BUCKETS_STORE,
    AGGREGATES_STORE,
    ALERTS_STORE,
];

/// Timer of a contact's next due item (key: the contact), on either clock.
pub(crate) const CONTACT_TIMER: &str = "w";
/// Timer closing a partition's bucket (key: bucket key).
pub(crate) const BUCKET_TIMER: &str = "b";
/// Timer evaluating a tenant's bucket (key: bucket key).
pub(crate) const AGGREGATE_TIMER: &str = "a";

/// A partition that handled a record this recently is consuming, not quiet.
const ACTIVE_MS: i64 = 1_000;

/// Physical names of the topics the detector reads and writes.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub launches: String,
    pub events: String,
    pub partials: String,
    pub missing: String,
    pub resolved: String,
    pub exceptions: String,
    pub alerts: String,
}

/// The completion detector.
pub struct Detector {
    pub(crate) config: DetectorConfig,
    pub(crate) names: Names,
    pub(crate) join: JoinSettings,
    pub(crate) monitor: MonitorSettings,
    pub(crate) windows: Windows,
    /// Readers of the two inputs (fast for the current schemas).
    inputs: Inputs,
    /// Wall time of the last record handled, per partition (not state: a
    /// restarted instance starts out "quiet" until its first batch).
    activity: HashMap<i32, i64>,
}

impl Detector {
    pub fn new(config: DetectorConfig) -> Self {
        let t = &config.topics;
        let names = Names {
            launches: t.name(topics::CALL_LAUNCHES),
            events: t.name(topics::CALL_EVENTS),
            partials: t.name(DELIVERY_PARTIALS),
            missing: t.name(topics::COMPLETION_MISSING),
            resolved: t.name(topics::COMPLETION_RESOLVED),
            exceptions: t.name(topics::EXCEPTIONS),
            alerts: t.name(topics::ALERTS),
        };
        let windows = Windows::new(t.name(topics::CONTROL));
        let join = JoinSettings {
            early_grace_ms: config.early_grace_ms,
            late_retention_ms: config.late_retention_ms,
            closed_retention_ms: config.closed_retention_ms,
        };
        let monitor = MonitorSettings {
            bucket_ms: config.bucket_ms,
            threshold: config.delivery_threshold,
            min_launches: config.min_bucket_launches,
            quiet_ms: config.alert_quiet_ms,
        };
        Self {
            config,
            names,
            join,
            monitor,
            windows,
            inputs: Inputs::default(),
            activity: HashMap::new(),
        }
    }

    pub(crate) fn default_window(&self) -> Window {
        Window {
            window_ms: self.config.default_window_ms,
            grace_ms: self.config.default_grace_ms,
        }
    }

    fn lagging(&self, ctx: &Context<'_>) -> bool {
        let wall = ctx.wall_clock_ms();
        let active = self
            .activity
            .get(&ctx.partition())
            .is_some_and(|at| wall - at < ACTIVE_MS);
        active && wall.saturating_sub(ctx.stream_time_ms()) > self.config.lag_tolerance_ms
    }

    /// Stream time and the effective time of this partition now.
    pub(crate) fn clocks(&self, ctx: &Context<'_>) -> Clocks {
        let stream_ms = ctx.stream_time_ms();
        let now_ms = if self.lagging(ctx) {
            stream_ms
        } else {
            stream_ms.max(ctx.wall_clock_ms())
        };
        Clocks { stream_ms, now_ms }
    }

    fn on_launch(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let value = record.value.as_deref().unwrap_or_default();
        let launch = self
            .inputs
            .launch(value)
            .map_err(|e| ProcessError::Decode(e.to_string()))?;
        // Failed, ambiguous and shadow launches placed no call (an ambiguous
        // one comes back as accepted once reconciled).
        if launch.status != LaunchStatus::Accepted {
            return Ok(());
        }
        let window = self.windows.window(
            ctx,
            &launch.tenant_id,
            Some(&launch.campaign_id),
            self.default_window(),
        );
        let key = contact_key(&launch.tenant_id, &launch.contact_id);
        let accepted = Launch {
            launch_id: launch.launch_id,
            job_id: launch.job_id,
            event_id: launch.event_id,
            correlation_id: launch.correlation_id,
            tenant_id: launch.tenant_id.into_owned(),
            campaign_id: launch.campaign_id.into_owned(),
            provider: launch.provider.into_owned(),
            provider_call_id: launch
                .provider_call_id
                .map(Cow::into_owned)
                .unwrap_or_default(),
            accepted_at_ms: launch.occurred_at_ms,
            window_ms: window.window_ms,
            grace_ms: window.grace_ms,
            missing: None,
        };
        self.with_contact(ctx, &key, |state, now| state.add_launch(accepted, now))
    }

    fn on_event(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let value = record.value.as_deref().unwrap_or_default();
        let event = self
            .inputs
            .event(value)
            .map_err(|e| ProcessError::Decode(e.to_string()))?;
        let Some(outcome) = crate::completion::final_outcome_of(
            &event.provider,
            &event.provider_status,
            event.answered_by.as_deref(),
            event.outcome,
        ) else {
            return Ok(());
        };
        let key = contact_key(&event.tenant_id, &event.contact_id);
        let completion = Completion {
            event_id: event.event_id,
            tenant_id: event.tenant_id.into_owned(),
            call_id: event.call_id.into_owned(),
            launch_id: event.launch_id,
            occurred_at_ms: event.occurred_at_ms,
            arrived_at_ms: 0,
            source: event.source,
            outcome,
        };
        self.with_contact(ctx, &key, |state, now| {
            state.add_completion(
                Completion {
                    arrived_at_ms: now,
                    ..completion
                },
                now,
            )
        })
    }

    /// Re-arms a timer the wall clock fired while the partition catches up:
    /// the wall clock looks again in a moment, and stream time keeps the
    /// deadline (the backlog may pass it first).
    fn defer(&self, ctx: &mut Context<'_>, timer: &Timer) {
        let (name, key) = (&timer.handle.name, &timer.handle.key);
        ctx.set_timer(
            TimeDomain::WallClock,
            name,
            key.clone(),
            ctx.wall_clock_ms() + ACTIVE_MS,
            &timer.payload,
        );
        if timer.handle.domain == TimeDomain::Either {
            let due = timer.due_ms;
            ctx.set_timer(
                TimeDomain::EventTime,
                name,
                key.clone(),
                due,
                &timer.payload,
            );
        }
    }
}

impl Processor for Detector {
    fn stores(&self) -> &'static [&'static str] {
        STORES
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        self.activity.insert(ctx.partition(), ctx.wall_clock_ms());
        if record.topic == self.names.launches {
            self.on_launch(ctx, record)
        } else if record.topic == self.names.events {
            self.on_event(ctx, record)
        } else if record.topic == self.names.partials {
            self.on_partial(ctx, record)
        } else {
            Err(ProcessError::Invalid(format!(
                "the detector does not read topic {}",
                record.topic
            )))
        }
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        // A timer of either clock that stream time has not reached was fired by the wall clock.
        let by_wall_clock = match timer.handle.domain {
            TimeDomain::WallClock => true,
            TimeDomain::Either => timer.due_ms > ctx.stream_time_ms(),
            TimeDomain::EventTime => false,
        };
        if by_wall_clock && self.lagging(ctx) {
            self.defer(ctx, timer);
            return Ok(());
        }
        let key = timer.handle.key.as_slice();
        match timer.handle.name.as_str() {
            CONTACT_TIMER => self.with_contact(ctx, key, |_, _| Vec::new()),
            BUCKET_TIMER => self.close_bucket(ctx, key),
            AGGREGATE_TIMER => self.evaluate_bucket(ctx, key),
            other => Err(ProcessError::Invalid(format!("unknown timer {other:?}"))),
        }
    }
}
