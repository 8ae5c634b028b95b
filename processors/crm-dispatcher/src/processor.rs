//! The `Processor` the runtime runs: decodes what arrives (a command or an
//! operator's retry on `crm-commands`, a timer, an effect result), loads the
//! contact's state, lets the state machine take one step and saves the
//! state, all in one transaction.

use callstream_runtime::{header, Context, EffectResult, ProcessError, Processor, Record, Timer};
use callstream_schemas::{ContactCommand, CrmCommand, DecodeError, Event};

use crate::control::Switches;
use crate::machine::{Env, Step, TIMER};
use crate::state::STORES;
use crate::wire::{token_of, Outcome};

/// The CRM dispatcher over switches `S` (the control table in production).
pub struct CrmDispatcher<S> {
    env: Env<S>,
}

impl<S: Switches> CrmDispatcher<S> {
    pub fn new(env: Env<S>) -> Self {
        Self { env }
    }
}

/// What `crm-commands` carries.
enum Arrival {
    Command(CrmCommand),
    /// An operator's retry of a failed command (see `retry`).
    Retry(ContactCommand),
}

/// Decodes a `crm-commands` value: a CRM command, else an operator's retry.
fn decode(bytes: &[u8]) -> Result<Arrival, ProcessError> {
    let decode_error = |e: DecodeError| ProcessError::Decode(e.to_string());
    let arrival = match CrmCommand::decode(bytes) {
        Ok(command) => Arrival::Command(command),
        Err(DecodeError::WrongType { .. }) => {
            Arrival::Retry(ContactCommand::decode(bytes).map_err(decode_error)?)
        }
        Err(e) => return Err(decode_error(e)),
    };
    let contact = match &arrival {
        Arrival::Command(c) => &c.contact_id,
        Arrival::Retry(r) => &r.contact_id,
    };
    if contact.is_empty() {
        return Err(ProcessError::Invalid(
            "a crm-commands record without a contact_id".into(),
        ));
    }
    Ok(arrival)
}

impl<S: Switches> Processor for CrmDispatcher<S> {
    fn stores(&self) -> &'static [&'static str] {
        STORES
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let bytes = record
            .value
            .as_deref()
            .ok_or_else(|| ProcessError::Decode("a crm-command without a value".into()))?;
        let traceparent = record
            .headers
            .get_str(header::TRACEPARENT)
            .map(str::to_owned);
        match decode(bytes)? {
            Arrival::Command(command) => {
                let (tenant, contact) = (command.tenant_id.clone(), command.contact_id.clone());
                let mut step = Step::load(&self.env, ctx, &tenant, &contact)?;
                step.arrive(command, traceparent)?;
                step.save()
            }
            Arrival::Retry(request) => {
                let (tenant, contact) = (request.tenant_id.clone(), request.contact_id.clone());
                let mut step = Step::load(&self.env, ctx, &tenant, &contact)?;
                step.operator_retry(&request, traceparent)?;
                step.save()
            }
        }
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        if timer.handle.name != TIMER {
            return Ok(());
        }
        let token = std::str::from_utf8(&timer.payload)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| ProcessError::Invalid("timer payload is not a step token".into()))?;
        let mut step = Step::load_key(&self.env, ctx, timer.handle.key.clone())?;
        step.on_timer(token)?;
        step.save()
    }

    fn on_effect(
        &mut self,
        ctx: &mut Context<'_>,
        result: &EffectResult,
    ) -> Result<(), ProcessError> {
        let Some(token) = token_of(&result.request.id) else {
            return Err(ProcessError::Invalid(
                "effect id without a step token".into(),
            ));
        };
        let outcome = Outcome::decode(&result.payload);
        let mut step = Step::load_key(&self.env, ctx, result.request.key.clone())?;
        step.on_outcome(token, outcome)?;
        step.save()
    }
}
