//! The `Processor` the runtime runs, in two steps on one consumer group (as a Kafka Streams
//! application with a repartition topic):
//! 1. Route: `alerts`, `exceptions` and `dead-letters` in; each one notified becomes one
//!    `Notification` per channel on `notifications`, keyed by channel.
//! 2. Send: `notifications` in; each channel's outbox (state keyed by channel) takes it,
//!    and its sends go out as effects, one at a time, after the transaction that recorded
//!    them commits. Results, retries and digest windows come back as effect results and a
//!    wake-up timer per channel.

use std::sync::Arc;

use callstream_kit::control::{ControlTable, NotificationPolicy, ALL_TENANTS};
use callstream_platform::topics::{self, dead_letter};
use callstream_runtime::{
    Context, EffectResult, ProcessError, Processor, Record, TimeDomain, Timer, TimerHandle,
};
use callstream_schemas::{
    decode_any, Alert, Event, ExceptionEvent, ExceptionStatus, ExceptionType, Notification,
};

use crate::config::NotifierConfig;
use crate::emit;
use crate::outbox::{Outbox, Rules, SendResult, Settled, Timing};
use crate::route::{self, Draft, Letter};
use crate::telemetry::NotifierMetrics;
use crate::watch::{self, Signal, Watch};
use crate::wire::{parse_effect_id, SendRequest};

/// The store of the channels' outboxes, keyed by channel.
pub const OUTBOXES: &str = "outboxes";
/// The store of each tenant's [`Watch`], keyed by tenant.
pub const WATCHES: &str = "watches";
/// The store of open missing completions, keyed `tenant/exception id` (present: open).
pub const MISSING_OPEN: &str = "missing-open";
pub const STORES: &[&str] = &[OUTBOXES, WATCHES, MISSING_OPEN];
/// The per-channel timer: a digest window ends, the next send's turn, a lost result.
pub const WAKE: &str = "wake";
/// The per-tenant timer of the watch: a counting window slides.
pub const WATCH: &str = "watch";

struct Names {
    alerts: String,
    exceptions: String,
    dead_letters: String,
    notifications: String,
    signals: String,
    audit: String,
}

/// The notifier.
pub struct Notifier {
    config: Arc<NotifierConfig>,
    control: ControlTable,
    names: Names,
    metrics: NotifierMetrics,
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Notifier {
    pub fn new(config: NotifierConfig, metrics: NotifierMetrics) -> Self {
        let t = &config.topics;
        let names = Names {
            alerts: t.name(topics::ALERTS),
            exceptions: t.name(topics::EXCEPTIONS),
            dead_letters: t.name(topics::DEAD_LETTERS),
            notifications: t.name(topics::NOTIFICATIONS),
            signals: t.name(topics::NOTIFIER_SIGNALS),
            audit: t.name(topics::AUDIT),
        };
        Self {
            control: ControlTable::new(t.name(topics::CONTROL)),
            config: Arc::new(config),
            names,
            metrics,
        }
    }

    fn rules(&self, channel: &str) -> Rules {
        Rules {
            interval_ms: self
                .config
                .channels
                .get(channel)
                .map_or(60_000, |c| c.interval_ms()),
            max_attempts: self.config.max_attempts,
            backoff: self.config.backoff,
            result_timeout_ms: ms(self.config.result_timeout),
            memory_ms: ms(self.config.memory),
        }
    }

    /// The tenant's routes, and the deployment's (`*`).
    fn policies(
        &self,
        ctx: &Context<'_>,
        tenant: &str,
    ) -> (
        Option<Arc<NotificationPolicy>>,
        Option<Arc<NotificationPolicy>>,
    ) {
        let view = self.control.view(ctx);
        (view.notifications(tenant), view.notifications(ALL_TENANTS))
    }

    fn route(&self, ctx: &mut Context<'_>, draft: Draft) {
        let (tenant, deployment) = self.policies(ctx, &draft.tenant);
        let (out, refused) = route::notifications(
            &draft,
            tenant.as_deref(),
            deployment.as_deref(),
            &self.config.channels,
            self.config.console_url.as_deref(),
        );
        for r in refused {
            self.metrics.refused(&r.channel);
            tracing::warn!(tenant = %r.tenant, channel = %r.channel, why = r.why,
                kind = %draft.kind, "a route names a channel that cannot take it; not sent there");
        }
        for n in out {
            self.metrics.routed(&n.kind);
            if let Some(output) =
                callstream_kit::emit::output_or_log(&self.names.notifications, &n.channel, &n)
            {
                ctx.emit(output);
            }
        }
    }

    fn letter(record: &Record) -> Letter {
        let header = |name| record.headers.get_str(name).unwrap_or("unknown").to_owned();
        let decoded = record.value.as_deref().and_then(|v| decode_any(v).ok());
        let envelope = decoded.as_ref().map(|e| e.envelope());
        Letter {
            tenant: envelope
                .as_ref()
                .map_or_else(|| ALL_TENANTS.to_owned(), |e| e.tenant_id.to_string()),
            app: header(dead_letter::DLQ_APP),
            source: header(dead_letter::DLQ_SOURCE),
            kind: header(dead_letter::DLQ_KIND),
            reason: header(dead_letter::DLQ_REASON).chars().take(500).collect(),
            event_id: envelope.as_ref().map(|e| e.event_id),
            correlation_id: envelope.as_ref().and_then(|e| e.correlation_id),
            at: callstream_kit::emit::timestamp(record.timestamp_ms),
        }
    }

    fn load(ctx: &Context<'_>, channel: &str) -> Result<Outbox, ProcessError> {
        Ok(ctx
            .get_json::<Outbox>(OUTBOXES, channel.as_bytes())
            .map_err(|e| ProcessError::Invalid(format!("outbox of {channel}: {e}")))?
            .unwrap_or_default())
    }

    /// Carries out what is due on `channel`'s outbox, arms its timer and saves it.
    fn step(&self, ctx: &mut Context<'_>, channel: &str, mut outbox: Outbox) {
        let now = ctx.wall_clock_ms();
        let rules = self.rules(channel);
        outbox.close_windows(channel, now);
        if let Some(settled) = outbox.expire(&rules, now) {
            self.settled(ctx, channel, settled, now);
        }
        if self.config.channels.get(channel).is_none() {
            // The channel left the channels file: what waits for it fails, visibly.
            while let Some(send) = outbox.next_send(now) {
                let gone = SendResult::Failed {
                    retriable: false,
                    reason: "the channel is no longer declared".into(),
                };
                let settled =
                    outbox.settle(send.message.message_id, send.attempt, gone, &rules, now);
                self.settled(ctx, channel, settled, now);
                outbox.not_before_ms = now;
            }
        }
        if let Some(send) = outbox.next_send(now) {
            let request = SendRequest {
                channel: channel.to_owned(),
                attempt: send.attempt,
                message: send.message,
            };
            // A struct of strings and numbers always serialises.
            let payload = serde_json::to_vec(&request).unwrap_or_default();
            ctx.request_effect(channel.as_bytes().to_vec(), request.effect_id(), payload);
        }
        outbox.prune(&rules, now);
        let key = channel.as_bytes().to_vec();
        match outbox.next_wake(&rules) {
            Some(due) => {
                ctx.set_timer(TimeDomain::WallClock, WAKE, key.clone(), due.max(now), []);
            }
            None => ctx.cancel_timer(&TimerHandle {
                domain: TimeDomain::WallClock,
                name: WAKE.into(),
                key: key.clone(),
            }),
        }
        if outbox.is_empty() {
            ctx.delete(OUTBOXES, key);
        } else if let Err(e) = ctx.put_json(OUTBOXES, key, &outbox) {
            tracing::error!(%channel, error = %e, "outbox does not serialise");
        }
    }

    fn settled(&self, ctx: &mut Context<'_>, channel: &str, settled: Settled, now: i64) {
        match settled {
            Settled::Sent(message) => {
                self.metrics.sent(channel, &message);
                let audit = emit::sent(&message, channel, now);
                self.emit(ctx, &self.names.audit, &message.tenant, &audit);
            }
            Settled::Retry { at_ms, reason } => {
                self.metrics.retried(channel);
                tracing::warn!(%channel, %reason, retry_in_ms = at_ms - now, "notification send failed; retrying");
            }
            Settled::Failed { message, reason } => {
                self.metrics.failed(channel);
                tracing::error!(%channel, message_id = %message.message_id, %reason,
                    "notification failed for good; exception opened");
                let (audit, exception) = emit::failed(&message, channel, &reason, now);
                self.emit(ctx, &self.names.audit, &message.tenant, &audit);
                // Keyed as every exception is, by its contact (here the channel).
                self.emit(
                    ctx,
                    &self.names.exceptions,
                    &exception.contact_id,
                    &exception,
                );
            }
            Settled::Stale => {}
        }
    }

    fn emit<E: Event>(&self, ctx: &mut Context<'_>, topic: &str, key: &str, event: &E) {
        if let Some(output) = callstream_kit::emit::output_or_log(topic, key, event) {
            ctx.emit(output);
        }
    }

    fn on_notification(&self, ctx: &mut Context<'_>, n: Notification) -> Result<(), ProcessError> {
        let (tenant, deployment) = self.policies(ctx, &n.tenant_id);
        let policy = tenant.or(deployment);
        let timing = Timing {
            digest_ms: policy
                .as_ref()
                .map_or(ms(callstream_kit::control::settings::DEFAULT_DIGEST), |p| {
                    ms(p.digest)
                }),
            quiet: policy.as_ref().and_then(|p| p.quiet),
        };
        let mut outbox = Self::load(ctx, &n.channel)?;
        let now = ctx.wall_clock_ms();
        let taken = outbox.take(&n.channel, &n, timing, now);
        self.metrics.taken(&n.channel, taken);
        self.step(ctx, &n.channel, outbox);
        Ok(())
    }
}

/// What an exception event counts for the watch.
fn exception_signal(e: &ExceptionEvent) -> Option<Signal> {
    let tenant = e.tenant_id.clone();
    let exception_id = e.exception_id;
    match (e.exception_type, e.status) {
        (ExceptionType::CompletionMissing, ExceptionStatus::Open) => Some(Signal::MissingOpened {
            tenant,
            exception_id,
        }),
        (
            ExceptionType::CompletionMissing,
            ExceptionStatus::Resolved | ExceptionStatus::Ignored,
        ) => Some(Signal::MissingClosed {
            tenant,
            exception_id,
        }),
        (ExceptionType::LaunchFailed | ExceptionType::CrmFailed, ExceptionStatus::Open) => {
            Some(Signal::Failure {
                tenant,
                exception_id,
                at_ms: e.occurred_at.timestamp_millis(),
            })
        }
        _ => None,
    }
}

impl Notifier {
    fn signal(&self, ctx: &mut Context<'_>, signal: &Signal) {
        // A tagged enum of strings and numbers always serialises.
        let value = serde_json::to_vec(signal).unwrap_or_default();
        ctx.emit(callstream_runtime::Output::new(
            self.names.signals.clone(),
            signal.tenant().as_bytes().to_vec(),
            value,
        ));
    }

    /// Counts a signal in its tenant's watch, then evaluates it.
    fn on_signal(&self, ctx: &mut Context<'_>, signal: Signal) -> Result<(), ProcessError> {
        let tenant = signal.tenant().to_owned();
        // A missing completion counts once however often its opening or closing is seen.
        let counts = match &signal {
            Signal::MissingOpened { exception_id, .. }
            | Signal::MissingClosed { exception_id, .. } => {
                let key = format!("{tenant}/{exception_id}").into_bytes();
                let open = ctx.get(MISSING_OPEN, &key).is_some();
                match (&signal, open) {
                    (Signal::MissingOpened { .. }, false) => {
                        ctx.put(MISSING_OPEN, key, Vec::new());
                        true
                    }
                    (Signal::MissingClosed { .. }, true) => {
                        ctx.delete(MISSING_OPEN, key);
                        true
                    }
                    _ => false,
                }
            }
            _ => true,
        };
        let mut w = self.load_watch(ctx, &tenant)?;
        if counts {
            w.count(&signal, &self.config.thresholds);
        }
        self.evaluate(ctx, &tenant, w);
        Ok(())
    }

    fn load_watch(&self, ctx: &Context<'_>, tenant: &str) -> Result<Watch, ProcessError> {
        Ok(ctx
            .get_json::<Watch>(WATCHES, tenant.as_bytes())
            .map_err(|e| ProcessError::Invalid(format!("watch of {tenant}: {e}")))?
            .unwrap_or_default())
    }

    /// Raises and resolves what the watch says, arms its timer and saves it.
    fn evaluate(&self, ctx: &mut Context<'_>, tenant: &str, mut w: Watch) {
        let now = ctx.wall_clock_ms();
        let t = &self.config.thresholds;
        for change in w.evaluate(tenant, now, t) {
            tracing::warn!(%tenant, kind = %change.kind, status = %change.status,
                detail = %change.detail, "notifier alert");
            let alert = watch::alert(tenant, &change, now);
            self.emit(ctx, &self.names.alerts, tenant, &alert);
        }
        let key = tenant.as_bytes().to_vec();
        match w.next_wake(t) {
            Some(due) => {
                ctx.set_timer(TimeDomain::WallClock, WATCH, key.clone(), due.max(now), []);
            }
            None => ctx.cancel_timer(&TimerHandle {
                domain: TimeDomain::WallClock,
                name: WATCH.into(),
                key: key.clone(),
            }),
        }
        if w == Watch::default() {
            ctx.delete(WATCHES, key);
        } else if let Err(e) = ctx.put_json(WATCHES, key, &w) {
            tracing::error!(%tenant, error = %e, "watch does not serialise");
        }
    }
}

impl Processor for Notifier {
    fn stores(&self) -> &'static [&'static str] {
        STORES
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let value = || {
            record
                .value
                .as_deref()
                .ok_or_else(|| ProcessError::Decode("a record without a value".into()))
        };
        let decode_error = |e: callstream_schemas::DecodeError| ProcessError::Decode(e.to_string());
        if record.topic == self.names.notifications {
            let n = Notification::decode(value()?).map_err(decode_error)?;
            self.on_notification(ctx, n)
        } else if record.topic == self.names.alerts {
            let alert = Alert::decode(value()?).map_err(decode_error)?;
            self.route(ctx, route::alert(&alert));
            Ok(())
        } else if record.topic == self.names.exceptions {
            let e = ExceptionEvent::decode(value()?).map_err(decode_error)?;
            if let Some(signal) = exception_signal(&e) {
                self.signal(ctx, &signal);
            }
            if let Some(draft) = route::exception(&e) {
                self.route(ctx, draft);
            }
            Ok(())
        } else if record.topic == self.names.dead_letters {
            // Never an error: a dead letter that failed here would be dead-lettered again.
            let letter = Self::letter(record);
            self.signal(
                ctx,
                &Signal::DeadLetter {
                    tenant: letter.tenant.clone(),
                    source: letter.source.clone(),
                    at_ms: record.timestamp_ms,
                },
            );
            // The letter opens an exception (an operator acts on it, and it is notified from
            // there), named as the dead-letters view names the letter.
            let letter_id = callstream_domain::ids::view::dead_letter(
                &record.topic,
                record.partition,
                record.offset,
            );
            let key = record
                .key
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            let exception = route::dead_letter_exception(&letter, letter_id, &key);
            self.emit(ctx, &self.names.exceptions, &key, &exception);
            Ok(())
        } else if record.topic == self.names.signals {
            let signal: Signal = serde_json::from_slice(value()?)
                .map_err(|e| ProcessError::Decode(format!("a notifier signal: {e}")))?;
            self.on_signal(ctx, signal)
        } else {
            Err(ProcessError::Invalid(format!(
                "the notifier does not read topic {}",
                record.topic
            )))
        }
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        let key = String::from_utf8_lossy(&timer.handle.key).into_owned();
        match timer.handle.name.as_str() {
            WAKE => {
                let outbox = Self::load(ctx, &key)?;
                self.step(ctx, &key, outbox);
            }
            WATCH => {
                let w = self.load_watch(ctx, &key)?;
                self.evaluate(ctx, &key, w);
            }
            other => return Err(ProcessError::Invalid(format!("unknown timer {other:?}"))),
        }
        Ok(())
    }

    fn on_effect(
        &mut self,
        ctx: &mut Context<'_>,
        result: &EffectResult,
    ) -> Result<(), ProcessError> {
        let Some((message_id, attempt)) = parse_effect_id(&result.request.id) else {
            return Err(ProcessError::Invalid(format!(
                "effect id {:?}",
                result.request.id
            )));
        };
        let channel = String::from_utf8_lossy(&result.request.key).into_owned();
        let mut outbox = Self::load(ctx, &channel)?;
        let now = ctx.wall_clock_ms();
        let outcome = SendResult::decode(&result.payload);
        let settled = outbox.settle(message_id, attempt, outcome, &self.rules(&channel), now);
        self.settled(ctx, &channel, settled, now);
        self.step(ctx, &channel, outbox);
        // A sent message is recorded at once: the shorter the time between a send and its
        // commit, the fewer a crash can repeat.
        ctx.request_commit();
        Ok(())
    }
}
