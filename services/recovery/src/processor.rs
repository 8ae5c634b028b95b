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
    Actor, AuditResult, CompletionMissing, CompletionResolved, ContactCommand, Event,
    ExceptionStatus, Resolution,
};
use uuid::Uuid;

use crate::case::{decide, Case, ContactCases, Next, Phase};
use crate::config::RecoveryConfig;
use crate::emit::{self, AuditFacts, Which};
use crate::protocol::{FetchRequest, FetchResult};

/// Store of the cases, one entry per contact.
pub const CASES_STORE: &str = "cases";
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
        if let Some(output) = callstream_completion_detector::emit::record(topic, key, event) {
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

    /// Closes case `index` with its resolution: resolved event, both
    /// exceptions closed (`status`), and the audit event of `action`.
    pub(crate) fn finish(
        &self,
        ctx: &mut Context<'_>,
        state: &mut ContactCases,
        index: usize,
        closing: Closing<'_>,
    ) {
        let now = ctx.wall_clock_ms();
        let case = state.close(index, now);
        let contact = case.contact_id.clone();
        self.arm(ctx, contact.as_bytes(), &case, None);
        let actor = closing.actor.unwrap_or(&case.actor).clone();
        let command_id = closing.command_id.or(case.command_id);
        if let Some(event) = closing.event {
            self.emit(ctx, &self.names.events, &contact, event);
        }
        let resolved = emit::resolved(&case, closing.resolution, closing.event, &actor, now);
        self.emit(ctx, &self.names.resolved, &contact, &resolved);
        let mut which = vec![Which::Missing];
        if case.failed_exception {
            which.push(Which::RecoveryFailed);
        }
        for w in which {
            let detail = format!("closed: {}", closing.resolution);
            let e = emit::exception(&case, w, closing.exception_status, &actor, detail, now);
            self.emit(ctx, &self.names.exceptions, &contact, &e);
        }
        let audit = emit::audit(
            &case,
            AuditFacts {
                action: closing.action,
                actor: &actor,
                command_id,
                result: AuditResult::Applied,
                reason: closing.reason,
                detail: None,
                now_ms: now,
            },
        );
        self.emit(ctx, &self.names.audit, &case.tenant_id, &audit);
        tracing::info!(launch_id = %case.launch_id, tenant = %case.tenant_id,
            action = closing.action, actor = %actor.id, "missing completion case closed");
    }

    fn on_missing(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let missing: CompletionMissing = decode(record)?;
        let contact = record
            .key
            .clone()
            .unwrap_or_else(|| missing.contact_id.clone().into_bytes());
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
        let contact = record
            .key
            .clone()
            .unwrap_or_else(|| resolved.contact_id.clone().into_bytes());
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

    /// Carries out what a lookup result means for case `index`.
    pub(crate) fn apply_next(
        &self,
        ctx: &mut Context<'_>,
        contact: &[u8],
        state: &mut ContactCases,
        index: usize,
        next: Next,
    ) {
        let now = ctx.wall_clock_ms();
        match next {
            Next::Recovered { record, outcome } => {
                let event = emit::recovered(&state.cases[index], &record, outcome, now);
                self.finish(ctx, state, index, Closing::recovered(&event));
            }
            Next::AdvanceNoAnswer => {
                let event = emit::advance(
                    &state.cases[index],
                    callstream_schemas::CallOutcome::NoAnswer,
                    now,
                );
                self.finish(ctx, state, index, Closing::advanced(&event, "not_found"));
            }
            Next::Poll { at_ms } | Next::Retry { at_ms } => {
                let case = &mut state.cases[index];
                case.phase = Phase::Waiting { at_ms };
                let case = case.clone();
                self.arm(ctx, contact, &case, Some(at_ms));
            }
            Next::Fail { reason } => {
                let case = &mut state.cases[index];
                case.phase = Phase::Failed;
                case.failed_exception = true;
                let case = case.clone();
                self.arm(ctx, contact, &case, None);
                tracing::warn!(launch_id = %case.launch_id, %reason, "recovery gave up; exception opened");
                let actor = case.actor.clone();
                let e = emit::exception(
                    &case,
                    Which::RecoveryFailed,
                    ExceptionStatus::Open,
                    &actor,
                    reason.clone(),
                    now,
                );
                self.emit(ctx, &self.names.exceptions, &case.contact_id, &e);
                let audit = emit::audit(
                    &case,
                    AuditFacts {
                        action: "recovery.failed",
                        actor: &actor,
                        command_id: case.command_id,
                        result: AuditResult::Rejected,
                        reason: Some("recovery_failed"),
                        detail: Some(&reason),
                        now_ms: now,
                    },
                );
                self.emit(ctx, &self.names.audit, &case.tenant_id, &audit);
            }
        }
    }
}

/// How a case closes.
pub(crate) struct Closing<'a> {
    pub resolution: Resolution,
    pub event: Option<&'a callstream_schemas::CallEvent>,
    pub exception_status: ExceptionStatus,
    pub action: &'a str,
    pub reason: Option<&'a str>,
    /// The operator, when a command closes it (else the case's actor).
    pub actor: Option<&'a Actor>,
    pub command_id: Option<Uuid>,
}

impl<'a> Closing<'a> {
    pub fn recovered(event: &'a callstream_schemas::CallEvent) -> Self {
        Self {
            resolution: Resolution::Recovered,
            event: Some(event),
            exception_status: ExceptionStatus::Resolved,
            action: "recovery.recovered",
            reason: None,
            actor: None,
            command_id: None,
        }
    }

    pub fn advanced(event: &'a callstream_schemas::CallEvent, reason: &'a str) -> Self {
        let voicemail = event.outcome == callstream_schemas::CallOutcome::Voicemail;
        Self {
            resolution: if voicemail {
                Resolution::AdvancedVoicemail
            } else {
                Resolution::AdvancedNoAnswer
            },
            event: Some(event),
            exception_status: ExceptionStatus::Resolved,
            action: if voicemail {
                "recovery.advanced_voicemail"
            } else {
                "recovery.advanced_no_answer"
            },
            reason: Some(reason),
            actor: None,
            command_id: None,
        }
    }
}

impl Processor for Recovery {
    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        if record.topic == self.names.missing {
            self.on_missing(ctx, record)
        } else if record.topic == self.names.resolved {
            self.on_resolved(ctx, record)
        } else if record.topic == self.names.commands {
            let command: ContactCommand = decode(record)?;
            self.on_command(ctx, record, command)
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
