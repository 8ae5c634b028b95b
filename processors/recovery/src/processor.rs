//! Recovery on the runtime. Inputs (co-partitioned, keyed by contact):
//! `completion-missing` opens a case; `completion-resolved` closes one (a
//! late completion, or recovery's own resolution coming back);
//! `contact-commands` carries the operator's recover, advance and ignore.
//!
//! The lookup is an effect: asked for in the case's transaction, run after
//! it commits, its result handled in a later one. A lost result (a crash
//! between) is covered by a wall-clock timer per case that asks again; the
//! lookup is read-only, so asking twice is harmless, and a result for a
//! lookup that was superseded is ignored.

use callstream_platform::topics;
use callstream_runtime::{
    Context, EffectResult, ProcessError, Processor, Record, TimeDomain, Timer, TimerHandle,
};
use callstream_schemas::{
    Actor, CompletionMissing, CompletionResolved, ContactCommand, Event, ExceptionStatus,
};
use uuid::Uuid;

use crate::case::{decide, Case, ContactCases, Phase};
use crate::config::RecoveryConfig;
use crate::emit::{self, Which};
use crate::wire::{FetchRequest, FetchResult};

/// Store of the cases, one entry per contact.
pub const CASES_STORE: &str = "cases";
/// Every store recovery declares (`Processor::stores`).
pub const STORES: &[&str] = &[CASES_STORE];
/// Wall-clock timer of one case (key: contact, 0, launch id).
const CASE_TIMER: &str = "case";
/// Wall-clock timer forgetting closed cases (key: contact).
const EXPIRY_TIMER: &str = "expire";

/// Physical names of the topics recovery reads and writes.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub missing: String,
    pub resolved: String,
    pub commands: String,
    pub events: String,
    pub exceptions: String,
    pub audit: String,
}

/// The recovery processor.
pub struct Recovery {
    pub(crate) config: RecoveryConfig,
    pub(crate) names: Names,
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn case_timer_key(contact: &[u8], launch_id: &Uuid) -> Vec<u8> {
    let mut key = Vec::with_capacity(contact.len() + 17);
    key.extend_from_slice(contact);
    key.push(0);
    key.extend_from_slice(launch_id.as_bytes());
    key
}

fn parse_case_timer_key(key: &[u8]) -> Option<(Vec<u8>, Uuid)> {
    let split = key.len().checked_sub(17)?;
    let launch = Uuid::from_slice(&key[split + 1..]).ok()?;
    Some((key[..split].to_vec(), launch))
}

fn handle(domain: TimeDomain, name: &str, key: Vec<u8>) -> TimerHandle {
    TimerHandle {
        domain,
        name: name.to_string(),
        key,
    }
}

fn decode<E: Event>(record: &Record) -> Result<E, ProcessError> {
    E::decode(record.value.as_deref().unwrap_or_default())
        .map_err(|e| ProcessError::Decode(e.to_string()))
}

impl Recovery {
    pub fn new(config: RecoveryConfig) -> Self {
        let t = &config.topics;
        let names = Names {
            missing: t.name(topics::COMPLETION_MISSING),
            resolved: t.name(topics::COMPLETION_RESOLVED),
            commands: t.name(topics::CONTACT_COMMANDS),
            events: t.name(topics::CALL_EVENTS),
            exceptions: t.name(topics::EXCEPTIONS),
            audit: t.name(topics::AUDIT),
        };
        Self { config, names }
    }

    pub(crate) fn load(ctx: &Context<'_>, contact: &[u8]) -> Result<ContactCases, ProcessError> {
        ctx.get_json(CASES_STORE, contact)
            .map(Option::unwrap_or_default)
            .map_err(|e| ProcessError::Invalid(format!("corrupt recovery state: {e}")))
    }

    pub(crate) fn save(
        &self,
        ctx: &mut Context<'_>,
        contact: &[u8],
        state: &mut ContactCases,
    ) -> Result<(), ProcessError> {
        let retention = ms(self.config.closed_retention);
        state.expire(ctx.wall_clock_ms(), retention);
        let expiry = handle(TimeDomain::WallClock, EXPIRY_TIMER, contact.to_vec());
        match state.next_expiry(retention) {
            Some(due) if ctx.timer_due(&expiry) != Some(due) => {
                ctx.set_timer(
                    TimeDomain::WallClock,
                    EXPIRY_TIMER,
                    contact.to_vec(),
                    due,
                    [],
                );
            }
            Some(_) => {}
            None => ctx.cancel_timer(&expiry),
        }
        if state.is_empty() {
            ctx.delete(CASES_STORE, contact.to_vec());
            Ok(())
        } else {
            ctx.put_json(CASES_STORE, contact.to_vec(), state)
                .map_err(|e| ProcessError::Invalid(format!("recovery state: {e}")))
        }
    }

    pub(crate) fn emit<E: Event>(&self, ctx: &mut Context<'_>, topic: &str, key: &str, event: &E) {
        if let Some(output) = callstream_kit::emit::output_or_log(topic, key, event) {
            ctx.emit(output);
        }
    }

    /// Asks for the next lookup of `case`, with a timer in case its result is lost.
    pub(crate) fn start_fetch(&self, ctx: &mut Context<'_>, contact: &[u8], case: &mut Case) {
        case.fetches += 1;
        case.phase = Phase::Fetching {
            fetch: case.fetches,
        };
        let request = FetchRequest {
            tenant_id: case.tenant_id.clone(),
            provider: case.provider.clone(),
            call_sid: case.provider_call_id.clone(),
        };
        // A struct of strings always serialises.
        let payload = serde_json::to_vec(&request).unwrap_or_default();
        ctx.request_effect(
            contact.to_vec(),
            format!("{}/{}", case.launch_id, case.fetches),
            payload,
        );
        let due = ctx
            .wall_clock_ms()
            .saturating_add(ms(self.config.result_timeout));
        self.arm(ctx, contact, case, Some(due));
    }

    pub(crate) fn arm(&self, ctx: &mut Context<'_>, contact: &[u8], case: &Case, due: Option<i64>) {
        let key = case_timer_key(contact, &case.launch_id);
        match due {
            Some(due) => {
                ctx.set_timer(TimeDomain::WallClock, CASE_TIMER, key, due, []);
            }
            None => ctx.cancel_timer(&handle(TimeDomain::WallClock, CASE_TIMER, key)),
        }
    }

    fn on_missing(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let missing: CompletionMissing = decode(record)?;
        // Tenant and contact: contact ids collide across tenants.
        let contact = callstream_kit::keys::contact_key(&missing.tenant_id, &missing.contact_id);
        let mut state = Self::load(ctx, &contact)?;
        if state.find(&missing.launch_id).is_some() || state.is_closed(&missing.launch_id) {
            return Ok(());
        }
        let mut case = Case {
            launch_id: missing.launch_id,
            missing_event_id: missing.event_id,
            tenant_id: missing.tenant_id,
            contact_id: missing.contact_id,
            campaign_id: missing.campaign_id,
            job_id: missing.job_id,
            provider: missing.provider,
            provider_call_id: missing.provider_call_id,
            correlation_id: missing.correlation_id,
            actor: Actor::system(emit::ACTOR),
            command_id: None,
            phase: Phase::Failed,
            fetches: 0,
            polls: 0,
            failures: 0,
            failed_exception: false,
        };
        self.start_fetch(ctx, &contact, &mut case);
        state.cases.push(case);
        self.save(ctx, &contact, &mut state)
    }

    fn on_resolved(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let resolved: CompletionResolved = decode(record)?;
        // Tenant and contact: contact ids collide across tenants.
        let contact = callstream_kit::keys::contact_key(&resolved.tenant_id, &resolved.contact_id);
        let mut state = Self::load(ctx, &contact)?;
        let now = ctx.wall_clock_ms();
        match state.find(&resolved.launch_id) {
            Some(index) => {
                // Closed elsewhere (a late completion): stop looking, close
                // what recovery itself opened.
                let case = state.close(index, now);
                self.arm(ctx, &contact, &case, None);
                if case.failed_exception {
                    let e = emit::exception(
                        &case,
                        Which::RecoveryFailed,
                        ExceptionStatus::Resolved,
                        &resolved.actor,
                        format!("closed: {}", resolved.resolution),
                        now,
                    );
                    self.emit(ctx, &self.names.exceptions, &case.contact_id, &e);
                }
            }
            None if !state.is_closed(&resolved.launch_id) => {
                // Seen before its completion-missing (they travel on two topics).
                state.closed.push((resolved.launch_id, now));
            }
            None => return Ok(()),
        }
        self.save(ctx, &contact, &mut state)
    }
}

impl Processor for Recovery {
    fn stores(&self) -> &'static [&'static str] {
        STORES
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        if record.topic == self.names.missing {
            self.on_missing(ctx, record)
        } else if record.topic == self.names.resolved {
            self.on_resolved(ctx, record)
        } else if record.topic == self.names.commands {
            let command: ContactCommand = decode(record)?;
            self.on_command(ctx, command)
        } else {
            Err(ProcessError::Invalid(format!(
                "recovery does not read topic {}",
                record.topic
            )))
        }
    }

    fn on_effect(
        &mut self,
        ctx: &mut Context<'_>,
        result: &EffectResult,
    ) -> Result<(), ProcessError> {
        let contact = result.request.key.clone();
        let Some((launch, fetch)) = result.request.id.split_once('/') else {
            return Err(ProcessError::Invalid(format!(
                "effect id {:?}",
                result.request.id
            )));
        };
        let (Ok(launch), Ok(fetch)) = (launch.parse::<Uuid>(), fetch.parse::<u32>()) else {
            return Err(ProcessError::Invalid(format!(
                "effect id {:?}",
                result.request.id
            )));
        };
        let mut state = Self::load(ctx, &contact)?;
        let Some(index) = state.find(&launch) else {
            return Ok(());
        };
        if state.cases[index].phase != (Phase::Fetching { fetch }) {
            // A lookup superseded by a newer one (a retry after a lost result).
            return Ok(());
        }
        let outcome = FetchResult::decode(&result.payload);
        let now = ctx.wall_clock_ms();
        let next = decide(&mut state.cases[index], &outcome, now, &self.config);
        if let Some(audit) = emit::lookup(&state.cases[index], &next, &outcome, now) {
            self.emit(ctx, &self.names.audit, &audit.tenant_id, &audit);
        }
        self.apply_next(ctx, &contact, &mut state, index, next);
        self.save(ctx, &contact, &mut state)
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        match timer.handle.name.as_str() {
            EXPIRY_TIMER => {
                let contact = timer.handle.key.clone();
                let mut state = Self::load(ctx, &contact)?;
                self.save(ctx, &contact, &mut state)
            }
            CASE_TIMER => {
                let Some((contact, launch)) = parse_case_timer_key(&timer.handle.key) else {
                    return Err(ProcessError::Invalid("case timer key".into()));
                };
                let mut state = Self::load(ctx, &contact)?;
                let Some(index) = state.find(&launch) else {
                    return Ok(());
                };
                let mut case = state.cases[index].clone();
                if case.phase == Phase::Failed {
                    return Ok(());
                }
                // Waiting: look again. Fetching: the result was lost; ask again.
                self.start_fetch(ctx, &contact, &mut case);
                state.cases[index] = case;
                self.save(ctx, &contact, &mut state)
            }
            other => Err(ProcessError::Invalid(format!("unknown timer {other:?}"))),
        }
    }
}
