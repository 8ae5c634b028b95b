//! The dispatch state machine of one contact, over the runtime context:
//! commands arrive, wait their turn, are written (or searched for), retried,
//! parked and settled. Decisions come from `policy`; this module applies
//! them to state, effects, timers and outputs, all in the step's transaction.
//!
//! Guarantees:
//! - One command per contact in flight; later commands of the contact wait
//!   in arrival order, other contacts are never held (a parked command
//!   waits on its own durable timer, not in the partition's way).
//! - Intent before effect: a request is asked for in the same transaction
//!   that records it and sets a wall-clock timer past the point where the
//!   request must be over; if its result is lost (crash, abort), the timer
//!   reconciles: a create is searched for, never blindly repeated.
//! - Every command settles exactly once per arrival, with a `crm-result`
//!   (and an exception when it failed), and its ledger entry.

use callstream_kit::keys::{contact_key, contact_of};
use callstream_runtime::{Context, ProcessError, TimeDomain, TimerHandle};
use callstream_schemas::CrmCommand;

use crate::backoff::seed_of;
use crate::config::{ms, CrmDispatcherConfig};
use crate::control::Switches;
use crate::emit::OutputTopics;
use crate::policy::{decide, decide_lost, Decision, FailReason, Next, Sent};
use crate::request::{fresh_properties, kind_of, search_request, write_request, WriteKind};
use crate::state::{
    queue_key, Active, ContactState, Phase, Queued, Resume, Settled, CONTACTS, QUEUE,
};
use crate::wire::{effect_id, EffectCall, Outcome};

/// Name of the per-contact timer (retry wait or reconciliation).
pub const TIMER: &str = "crm";

/// What every step needs besides the context.
pub struct Env<S> {
    pub config: CrmDispatcherConfig,
    pub topics: OutputTopics,
    pub switches: S,
}

/// A refusal of a step: the state or an output could not be handled.
pub(crate) fn invalid(what: &str, error: impl std::fmt::Display) -> ProcessError {
    ProcessError::Invalid(format!("{what}: {error}"))
}

/// One step of one contact's machine.
pub(crate) struct Step<'e, 'c, 'a, S> {
    pub(crate) env: &'e Env<S>,
    pub(crate) ctx: &'c mut Context<'a>,
    /// The contact's state, timer and effect key: tenant and contact
    /// (`callstream_kit::keys`), or the contact alone in state from before.
    key: Vec<u8>,
    /// The contact id, for logs.
    pub(crate) contact: String,
    pub(crate) state: ContactState,
    existed: bool,
    pub(crate) now: i64,
}

impl<'e, 'c, 'a, S: Switches> Step<'e, 'c, 'a, S> {
    /// Loads the state of `contact` of `tenant`.
    pub fn load(
        env: &'e Env<S>,
        ctx: &'c mut Context<'a>,
        tenant: &str,
        contact: &str,
    ) -> Result<Self, ProcessError> {
        Self::load_key(env, ctx, contact_key(tenant, contact))
    }

    /// Loads the state under `key` (a timer's or an effect's key).
    pub fn load_key(
        env: &'e Env<S>,
        ctx: &'c mut Context<'a>,
        key: Vec<u8>,
    ) -> Result<Self, ProcessError> {
        let state: Option<ContactState> = ctx
            .get_json(CONTACTS, &key)
            .map_err(|e| invalid("contact state", e))?;
        Ok(Self {
            env,
            now: ctx.wall_clock_ms(),
            ctx,
            contact: contact_of(&key).into_owned(),
            key,
            existed: state.is_some(),
            state: state.unwrap_or_default(),
        })
    }

    /// Writes the contact's state back (or deletes it when nothing is left).
    pub fn save(self) -> Result<(), ProcessError> {
        if self.state.is_empty() {
            if self.existed {
                self.ctx.delete(CONTACTS, self.key);
            }
            return Ok(());
        }
        self.ctx
            .put_json(CONTACTS, self.key, &self.state)
            .map_err(|e| invalid("contact state", e))
    }

    /// A command arrived: start it, or queue it behind the active one.
    pub fn arrive(
        &mut self,
        command: CrmCommand,
        traceparent: Option<String>,
    ) -> Result<(), ProcessError> {
        if self.state.active.is_none() && self.state.queued() == 0 {
            self.start(command, traceparent)?;
            return self.drain();
        }
        let key = queue_key(&self.key, self.state.next_seq);
        let queued = Queued {
            command,
            traceparent,
        };
        self.ctx
            .put_json(QUEUE, key, &queued)
            .map_err(|e| invalid("queued command", e))?;
        self.state.next_seq += 1;
        Ok(())
    }

    /// The result of the request with step `token` came back.
    pub fn on_outcome(&mut self, token: u32, outcome: Outcome) -> Result<(), ProcessError> {
        let Some(sent) = self.awaiting(token) else {
            tracing::debug!(contact = %self.contact, token, "result of an earlier step ignored");
            return Ok(());
        };
        self.env.config.metrics.request(sent, &outcome);
        let policy = self.env.config.policy;
        let now = self.now;
        let active = self.active_mut()?;
        if outcome.was_sent() {
            active.requests = active.requests.saturating_add(1);
        }
        if let Some(status) = outcome.http_status() {
            active.last_status = Some(status);
        }
        if !matches!(
            outcome,
            Outcome::Written { .. } | Outcome::Found { .. } | Outcome::NotFound | Outcome::Expired
        ) {
            active.last_error = Some(outcome.describe());
        }
        let seed = seed_of(&active.command.operation_id);
        let settle_left = active
            .maybe_applied
            .then(|| policy.settle_left(active.maybe_applied_at.unwrap_or(now), now));
        let decision = decide(sent, &outcome, active.failures, seed, &policy, settle_left);
        self.apply(decision)?;
        self.drain()
    }

    /// The contact's timer with step `token` fired.
    pub fn on_timer(&mut self, token: u32) -> Result<(), ProcessError> {
        let Some(active) = self.state.active.as_ref().filter(|a| a.token == token) else {
            tracing::debug!(contact = %self.contact, token, "timer of an earlier step ignored");
            return Ok(());
        };
        match active.phase {
            Phase::Parked {
                resume: Resume::Write,
            } => self.write()?,
            Phase::Parked {
                resume: Resume::Search,
            } => self.search()?,
            Phase::Writing | Phase::Searching => {
                let Some(sent) = self.awaiting(token) else {
                    return Ok(());
                };
                let policy = self.env.config.policy;
                let contact = self.contact.clone();
                let active = self.active_mut()?;
                active.last_error =
                    Some("no result in time (the request's result was lost)".into());
                tracing::info!(op_id = %active.command.operation_id, %contact,
                    ?sent, "no result for a CRM request; reconciling");
                let decision = decide_lost(sent, active.failures, &policy);
                self.apply(decision)?;
            }
        }
        self.drain()
    }

    /// Which request step `token` waits for, if it is the one awaited.
    fn awaiting(&self, token: u32) -> Option<Sent> {
        let active = self.state.active.as_ref().filter(|a| a.token == token)?;
        match active.phase {
            Phase::Searching => Some(Sent::Search),
            Phase::Writing => match kind_of(active.command.action) {
                Ok(WriteKind::Update) => Some(Sent::Update),
                Ok(WriteKind::Create { .. }) => Some(Sent::Create),
                Err(_) => None,
            },
            Phase::Parked { .. } => None,
        }
    }

    pub(crate) fn active_mut(&mut self) -> Result<&mut Active, ProcessError> {
        self.state
            .active
            .as_mut()
            .ok_or_else(|| ProcessError::Invalid("no active command".into()))
    }

    fn apply(&mut self, decision: Decision) -> Result<(), ProcessError> {
        let active = self.active_mut()?;
        if decision.failed {
            active.failures = active.failures.saturating_add(1);
        }
        if let Some(maybe) = decision.maybe_applied {
            // A create that may have landed starts (or restarts) its settle
            // window from when it was asked for.
            active.maybe_applied_at = if maybe {
                active.last_write_at.or(active.maybe_applied_at)
            } else {
                None
            };
            active.maybe_applied = maybe;
        }
        match decision.next {
            Next::Written { object_id } => self.applied(Settled::Applied, object_id),
            Next::Found { object_id } => self.applied(Settled::AlreadyApplied, object_id),
            Next::Write => self.write(),
            Next::Search => self.search(),
            Next::Park { resume, delay } => {
                self.env.config.metrics.parked.inc();
                let active = self.active_mut()?;
                active.token = active.token.wrapping_add(1);
                active.phase = Phase::Parked { resume };
                let (token, op) = (active.token, active.command.operation_id);
                tracing::debug!(op_id = %op, contact = %self.contact, ?resume,
                    delay_ms = delay.as_millis() as u64, "CRM command parked for a retry");
                self.set_timer(self.now.saturating_add(ms(delay)), token);
                Ok(())
            }
            Next::Fail { reason } => self.fail(reason),
        }
    }

    /// Starts the queued commands while the contact has none active.
    fn drain(&mut self) -> Result<(), ProcessError> {
        while self.state.active.is_none() && self.state.queued() > 0 {
            let key = queue_key(&self.key, self.state.head_seq);
            let queued: Option<Queued> = self
                .ctx
                .get_json(QUEUE, &key)
                .map_err(|e| invalid("queued command", e))?;
            self.ctx.delete(QUEUE, key);
            self.state.head_seq += 1;
            match queued {
                Some(queued) => self.start(queued.command, queued.traceparent)?,
                None => tracing::warn!(contact = %self.contact, seq = self.state.head_seq - 1,
                    "queued command missing; skipped"),
            }
        }
        if self.state.queued() == 0 {
            // Numbers restart, so an idle contact's state can go away.
            self.state.head_seq = 0;
            self.state.next_seq = 0;
        }
        Ok(())
    }

    /// Takes `command` up: a duplicate, stale or unsupported one settles at
    /// once; the others are written, or searched for first when an earlier
    /// try may have been applied.
    fn start(
        &mut self,
        command: CrmCommand,
        traceparent: Option<String>,
    ) -> Result<(), ProcessError> {
        let prior = self.ledger(&command.operation_id)?;
        let kind = kind_of(command.action);
        let create = matches!(kind, Ok(WriteKind::Create { .. }));
        let properties = match kind {
            Ok(WriteKind::Update) => fresh_properties(&self.state.applied_at, &command),
            _ => Default::default(),
        };
        let stale = matches!(kind, Ok(WriteKind::Update))
            && properties.is_empty()
            && !command.properties.is_empty();
        self.state.active = Some(Active {
            command,
            traceparent,
            token: 0,
            phase: Phase::Writing,
            requests: 0,
            failures: 0,
            maybe_applied: create && prior.as_ref().is_some_and(|p| p.maybe_applied),
            // An entry from before the window was kept gets a whole window.
            maybe_applied_at: prior
                .as_ref()
                .filter(|p| create && p.maybe_applied)
                .map(|p| p.maybe_applied_at.unwrap_or(self.now)),
            last_write_at: None,
            properties,
            last_status: None,
            last_error: None,
        });
        if let Some(entry) = prior.filter(|p| p.settled.is_final()) {
            return self.duplicate(entry);
        }
        match kind {
            Err(unsupported) => {
                self.active_mut()?.last_error = Some(unsupported.to_string());
                self.fail(FailReason::Unsupported)
            }
            Ok(_) if stale => self.stale(),
            Ok(WriteKind::Update) if self.active_mut()?.properties.is_empty() => {
                // Nothing to write: done, with nothing sent.
                let contact = self.contact.clone();
                self.applied(Settled::Applied, contact)
            }
            Ok(_) if self.active_mut()?.maybe_applied => self.search(),
            Ok(_) => self.write(),
        }
    }

    /// Writes the active command, unless the switches say otherwise.
    pub(crate) fn write(&mut self) -> Result<(), ProcessError> {
        let tenant = self.active_mut()?.command.tenant_id.clone();
        if !self.env.switches.crm_writes(self.ctx, &tenant) {
            return self.suppress();
        }
        if self.env.switches.shadow_mode(self.ctx, &tenant) {
            return self.shadow();
        }
        let active = self.active_mut()?;
        let kind = kind_of(active.command.action).map_err(|e| invalid("write", e))?;
        let request = write_request(&active.command, kind, active.properties.clone());
        self.send(request, Phase::Writing)
    }

    /// Searches the CRM for the active command's operation id.
    fn search(&mut self) -> Result<(), ProcessError> {
        let active = self.active_mut()?;
        let kind = kind_of(active.command.action).map_err(|e| invalid("search", e))?;
        let request = search_request(&active.command, kind);
        self.send(request, Phase::Searching)
    }

    /// Asks for the request, with its reconciliation timer, in this step.
    fn send(&mut self, request: crate::wire::CrmRequest, phase: Phase) -> Result<(), ProcessError> {
        let policy = self.env.config.policy;
        let now = self.now;
        let active = self.active_mut()?;
        active.token = active.token.wrapping_add(1);
        active.phase = phase;
        if phase == Phase::Writing {
            active.last_write_at = Some(now);
        }
        let token = active.token;
        let id = effect_id(&active.command.operation_id.to_string(), token);
        let call = EffectCall {
            tenant_id: active.command.tenant_id.clone(),
            not_after_ms: policy.send_by_ms(now),
            request,
        };
        let payload = serde_json::to_vec(&call).map_err(|e| invalid("effect request", e))?;
        self.ctx.request_effect(self.key.clone(), id, payload);
        self.set_timer(policy.result_deadline_ms(now), token);
        Ok(())
    }

    fn timer_handle(&self) -> TimerHandle {
        TimerHandle {
            domain: TimeDomain::WallClock,
            name: TIMER.to_owned(),
            key: self.key.clone(),
        }
    }

    fn set_timer(&mut self, due_ms: i64, token: u32) {
        let key = self.key.clone();
        self.ctx
            .set_timer(TimeDomain::WallClock, TIMER, key, due_ms, token.to_string());
    }

    /// Cancels the contact's timer if a step of the active command set one.
    pub(crate) fn cancel_timer(&mut self, token: u32) {
        if token > 0 {
            let handle = self.timer_handle();
            self.ctx.cancel_timer(&handle);
        }
    }
}
