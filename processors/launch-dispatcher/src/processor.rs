//! The dispatcher as a runtime processor: decodes launch commands, feeds
//! commands, due step timers and effect replies to the state machine, and
//! applies each [`Step`] to the context, so the ledger entry, the emitted
//! records, the step timer and the effect request of one step commit
//! together or not at all. The create request itself leaves only after
//! that commit (the runtime's effect contract): `dispatching` is durable
//! before the provider hears of the call.

use std::sync::Arc;

use callstream_runtime::{
    Context, EffectResult, ProcessError, Processor, Record, TimeDomain, Timer, TimerHandle,
};
use callstream_schemas::{ContactCommand, ContactCommandKind, DecodeError};
use callstream_schemas::{Event, LaunchCommand};
use tracing::{debug, error, info, warn};

use callstream_kit::control::ControlTable;

use crate::config::DispatchPolicy;
use crate::emit::{self, LaunchReport, OutputTopics};
use crate::ledger::{key_of, Entry, Launch, Outcome, LAUNCHES_STORE, STORES};
use crate::machine::{self, Env, Ignored, Notice, Step, Store, TimerChange};
use crate::numbers::{self, NumberCalls, FORGET_TIMER, NUMBERS_STORE};
use crate::telemetry::DispatchMetrics;
use crate::wire::EffectReply;
use callstream_kit::keys::phone_key;

/// The one timer per launch: its meaning follows the phase (reconcile a
/// lost answer, send the next attempt, look again, forget the entry).
pub const STEP_TIMER: &str = "step";

/// The launch dispatcher processor.
#[derive(Debug)]
pub struct LaunchDispatcher {
    pub policy: DispatchPolicy,
    pub topics: OutputTopics,
    /// The `control` global table (its physical name and decoded values).
    pub control: ControlTable,
    /// The provider adapter's name (`twilio`).
    pub provider: &'static str,
    /// Whether the adapter has a default caller id.
    pub has_default_from: bool,
    pub metrics: Arc<DispatchMetrics>,
}

impl LaunchDispatcher {
    /// A `cancel_future_jobs` command naming a launch: the lead became
    /// barred after the launch was sent (see `machine::on_stop`).
    fn stop(&self, ctx: &mut Context<'_>, value: &[u8]) -> Result<(), ProcessError> {
        let command =
            ContactCommand::decode(value).map_err(|e| ProcessError::Decode(e.to_string()))?;
        let (ContactCommandKind::CancelFutureJobs, Some(launch_id)) =
            (command.kind, command.launch_id)
        else {
            return Err(ProcessError::Invalid(format!(
                "a {} command on launch-commands names no launch to stop",
                command.kind
            )));
        };
        let key = key_of(&launch_id);
        // A launch this dispatcher never had (or has forgotten): nothing to stop.
        let Some(entry) = self.load(ctx, &key)? else {
            return Ok(());
        };
        let reason = command.reason.unwrap_or_else(|| "stopped".into());
        let env = self.env(ctx, &entry.launch);
        let step = machine::on_stop(entry, reason, &env);
        self.apply(ctx, key, step)
    }

    fn env(&self, ctx: &Context<'_>, launch: &Launch) -> Env<'_> {
        let control =
            crate::control::for_launch(&self.control, ctx, &launch.tenant_id, &launch.campaign_id);
        // Rules need the lead's zone; without one only the federal floor applies.
        let placed_calls_ms = match &launch.time_zone {
            Some(_) => self
                .number_calls(ctx, launch)
                .placed_with(control.calling_rules.cap_subject, launch),
            None => Vec::new(),
        };
        Env {
            now_ms: ctx.wall_clock_ms(),
            shadow: control.shadow,
            pause: control.pause,
            calling_rules: control.calling_rules,
            placed_calls_ms,
            policy: &self.policy,
            provider: self.provider,
            has_default_from: self.has_default_from,
        }
    }

    /// The calls placed to `launch`'s number. An entry that does not decode counts as none
    /// (logged): the contact's own count still applies, and the next call rewrites it.
    fn number_calls(&self, ctx: &Context<'_>, launch: &Launch) -> NumberCalls {
        let key = phone_key(&launch.tenant_id, &launch.to);
        match ctx
            .get(NUMBERS_STORE, key.as_bytes())
            .map(NumberCalls::decode)
        {
            None => NumberCalls::default(),
            Some(Ok(calls)) => calls,
            Some(Err(e)) => {
                error!(tenant = %launch.tenant_id, error = %e, "calls of a number do not decode; counting the contact's only");
                NumberCalls::default()
            }
        }
    }

    /// A call the provider took counts against the number's caps from now on, whichever
    /// contact it was for; the number is forgotten once no cap can count its calls.
    fn record_placed(&self, ctx: &mut Context<'_>, launch: &Launch, now: i64) {
        let mut calls = self.number_calls(ctx, launch);
        calls.record(launch, now);
        let key = phone_key(&launch.tenant_id, &launch.to).into_bytes();
        let forget_at = calls
            .newest_ms()
            .unwrap_or(now)
            .saturating_add(numbers::kept_ms());
        ctx.put(NUMBERS_STORE, key.clone(), calls.encode());
        ctx.set_timer(TimeDomain::WallClock, FORGET_TIMER, key, forget_at, []);
    }

    /// The forget timer of a number is due: drop what aged out, and the entry when empty.
    fn forget_number(&self, ctx: &mut Context<'_>, key: Vec<u8>) {
        let Some(Ok(mut calls)) = ctx.get(NUMBERS_STORE, &key).map(NumberCalls::decode) else {
            ctx.delete(NUMBERS_STORE, key);
            return;
        };
        let now = ctx.wall_clock_ms();
        calls.forget_before(now.saturating_sub(numbers::kept_ms()));
        match calls.newest_ms() {
            None => ctx.delete(NUMBERS_STORE, key),
            Some(newest) => {
                ctx.put(NUMBERS_STORE, key.clone(), calls.encode());
                let due = newest.saturating_add(numbers::kept_ms());
                ctx.set_timer(TimeDomain::WallClock, FORGET_TIMER, key, due, []);
            }
        }
    }

    fn load(&self, ctx: &Context<'_>, key: &[u8]) -> Result<Option<Entry>, ProcessError> {
        match ctx.get(LAUNCHES_STORE, key) {
            None => Ok(None),
            Some(bytes) => Entry::decode(bytes)
                .map(Some)
                .map_err(|e| ProcessError::Invalid(format!("ledger entry does not decode: {e}"))),
        }
    }

    fn apply(&self, ctx: &mut Context<'_>, key: Vec<u8>, step: Step) -> Result<(), ProcessError> {
        let now = ctx.wall_clock_ms();
        let Step {
            store,
            notices,
            effect,
            timer,
            ignored,
        } = step;
        match ignored {
            Some(Ignored::SecondCall) => {
                self.metrics.second_calls.inc();
                error!(launch = %String::from_utf8_lossy(&key), "{}", Ignored::SecondCall.as_str());
            }
            Some(Ignored::Duplicate) => {
                self.metrics.duplicate_commands.inc();
                info!(launch = %String::from_utf8_lossy(&key), "{}", Ignored::Duplicate.as_str());
            }
            Some(why) => debug!(launch = %String::from_utf8_lossy(&key), "{}", why.as_str()),
            None => {}
        }
        let entry = match store {
            Store::Keep => None,
            Store::Delete => {
                ctx.delete(LAUNCHES_STORE, key.clone());
                None
            }
            Store::Put(entry) => {
                ctx.put(LAUNCHES_STORE, key.clone(), entry.encode());
                Some(*entry)
            }
        };
        if let Some(entry) = &entry {
            for notice in &notices {
                self.emit(ctx, entry, notice, now)?;
                if let Notice::Final(Outcome::Accepted { .. }) = notice {
                    self.record_placed(ctx, &entry.launch, now);
                }
            }
            if let Some(effect) = effect {
                let id = format!("{}/{}", entry.launch.launch_id, entry.seq);
                ctx.request_effect(key.clone(), id, effect.encode());
            }
        }
        if let TimerChange::Set(due) = timer {
            ctx.set_timer(TimeDomain::WallClock, STEP_TIMER, key, due, []);
        }
        Ok(())
    }

    fn emit(
        &self,
        ctx: &mut Context<'_>,
        entry: &Entry,
        notice: &Notice,
        now: i64,
    ) -> Result<(), ProcessError> {
        let encode = |e: callstream_schemas::EncodeError| ProcessError::Invalid(e.to_string());
        let launch = &entry.launch;
        match notice {
            Notice::Final(outcome) => {
                let report = LaunchReport::of(outcome);
                self.metrics
                    .finished(&launch.tenant_id, report.status.as_str());
                info!(launch = %launch.launch_id, contact = %launch.contact_id,
                    status = %report.status, reason = report.reason.unwrap_or_default(),
                    reconciled = report.reconciled, attempts = entry.attempts, "launch finished");
                let record = emit::call_launch(&self.topics, self.provider, entry, &report, now)
                    .map_err(encode)?;
                ctx.emit(record);
                if let Outcome::Failed { failure } = outcome {
                    ctx.emit(emit::exception(&self.topics, entry, failure, now).map_err(encode)?);
                }
            }
            Notice::Ambiguous { reason, detail } => {
                self.metrics.ambiguous(reason);
                warn!(launch = %launch.launch_id, contact = %launch.contact_id, %reason,
                    "launch ambiguous; reconciling at the provider");
                let report = LaunchReport {
                    status: callstream_schemas::LaunchStatus::Ambiguous,
                    call_id: None,
                    reconciled: false,
                    reason: Some(reason),
                    detail: detail.as_deref(),
                    not_before_ms: None,
                };
                let record = emit::call_launch(&self.topics, self.provider, entry, &report, now)
                    .map_err(encode)?;
                ctx.emit(record);
            }
            Notice::Reconciled { detail } => {
                info!(launch = %launch.launch_id, %detail, "reconciled");
                ctx.emit(emit::reconciled(&self.topics, entry, detail, now).map_err(encode)?);
            }
        }
        Ok(())
    }
}

impl Processor for LaunchDispatcher {
    fn stores(&self) -> &'static [&'static str] {
        STORES
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let value = record
            .value
            .as_deref()
            .ok_or_else(|| ProcessError::Decode("a launch command without a value".into()))?;
        let command = match LaunchCommand::decode(value) {
            Ok(command) => command,
            // The contact processor's word that the lead may no longer be
            // called, on the same key behind the launch it stops.
            Err(DecodeError::WrongType { .. }) => return self.stop(ctx, value),
            Err(e) => return Err(ProcessError::Decode(e.to_string())),
        };
        let traceparent = record
            .headers
            .get_str(callstream_runtime::header::TRACEPARENT)
            .map(str::to_owned);
        let launch = Launch::from_command(&command, traceparent);
        let key = launch.key();
        let existing = self.load(ctx, &key)?;
        let env = self.env(ctx, &launch);
        let step = machine::on_command(existing, launch, &env);
        self.apply(ctx, key, step)
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        if timer.handle.name == FORGET_TIMER {
            self.forget_number(ctx, timer.handle.key.clone());
            return Ok(());
        }
        if timer.handle.name != STEP_TIMER {
            return Ok(());
        }
        let key = timer.handle.key.clone();
        let Some(entry) = self.load(ctx, &key)? else {
            return Ok(());
        };
        let env = self.env(ctx, &entry.launch);
        let step = machine::on_timer(entry, &env);
        self.apply(ctx, key, step)
    }

    fn on_effect(
        &mut self,
        ctx: &mut Context<'_>,
        result: &EffectResult,
    ) -> Result<(), ProcessError> {
        let key = result.request.key.clone();
        let reply = match EffectReply::decode(&result.payload) {
            Ok(reply) => reply,
            Err(e) => {
                // The step timer reconciles; nothing is lost by ignoring it.
                warn!(id = %result.request.id, error = %e, "unreadable effect reply ignored");
                return Ok(());
            }
        };
        let entry = match self.load(ctx, &key) {
            Ok(Some(entry)) => entry,
            Ok(None) => {
                debug!(id = %result.request.id, "reply for a forgotten launch");
                return Ok(());
            }
            Err(e) => {
                error!(id = %result.request.id, error = %e, "reply for an unreadable entry");
                return Ok(());
            }
        };
        let env = self.env(ctx, &entry.launch);
        let step = machine::on_reply(entry, reply, &env);
        self.apply(ctx, key, step)
    }
}

/// The step timer of a launch (for tests and tools).
pub fn step_timer(launch_id: &uuid::Uuid) -> TimerHandle {
    TimerHandle {
        domain: TimeDomain::WallClock,
        name: STEP_TIMER.into(),
        key: key_of(launch_id),
    }
}
