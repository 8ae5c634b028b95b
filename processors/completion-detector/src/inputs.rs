//! The detector's two inputs as the join reads them: the fields of an
//! accepted launch and of a call event, borrowed from the record's bytes
//! by the fast reader (`wire`) when they were written with the current
//! schema, else taken from the full decode (older writers, or bytes the
//! full decoder must refuse with its own error).

use std::borrow::Cow;

use callstream_schemas::{
    CallEvent, CallEventSource, CallLaunch, CallOutcome, DecodeError, Event, EventKind,
    LaunchStatus,
};
use uuid::Uuid;

use crate::avro_fields::{Layout, Val};

/// What the join needs of a `call-launch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaunchIn<'a> {
    pub event_id: Uuid,
    pub tenant_id: Cow<'a, str>,
    pub occurred_at_ms: i64,
    pub correlation_id: Option<Uuid>,
    pub launch_id: Uuid,
    pub job_id: Uuid,
    pub contact_id: Cow<'a, str>,
    pub campaign_id: Cow<'a, str>,
    pub status: LaunchStatus,
    pub provider: Cow<'a, str>,
    pub provider_call_id: Option<Cow<'a, str>>,
}

/// What the join needs of a `call-event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventIn<'a> {
    pub event_id: Uuid,
    pub tenant_id: Cow<'a, str>,
    pub occurred_at_ms: i64,
    pub provider: Cow<'a, str>,
    pub call_id: Cow<'a, str>,
    pub contact_id: Cow<'a, str>,
    pub launch_id: Option<Uuid>,
    pub source: CallEventSource,
    pub provider_status: Cow<'a, str>,
    /// The outcome the producer stated (the normaliser reads it last).
    pub outcome: CallOutcome,
    pub answered_by: Option<Cow<'a, str>>,
}

const LAUNCH_FIELDS: [&str; 11] = [
    "event_id",
    "tenant_id",
    "occurred_at",
    "correlation_id",
    "launch_id",
    "job_id",
    "contact_id",
    "campaign_id",
    "status",
    "provider",
    "provider_call_id",
];

const EVENT_FIELDS: [&str; 11] = [
    "event_id",
    "tenant_id",
    "occurred_at",
    "provider",
    "call_id",
    "contact_id",
    "launch_id",
    "source",
    "provider_status",
    "outcome",
    "answered_by",
];

/// An enum value by its symbol; a symbol the type does not know reads as
/// `Unknown`, as serde's `other` variant reads it in the full decode.
fn by_symbol<T: Copy>(all: &[T], as_str: fn(T) -> &'static str, unknown: T, symbol: &str) -> T {
    all.iter()
        .copied()
        .find(|v| as_str(*v) == symbol)
        .unwrap_or(unknown)
}

/// The readers of the current launch and event schemas.
#[derive(Debug)]
pub(crate) struct Inputs {
    launch: Option<Layout>,
    event: Option<Layout>,
}

impl Default for Inputs {
    fn default() -> Self {
        Self {
            launch: Layout::new(EventKind::CallLaunch, &LAUNCH_FIELDS),
            event: Layout::new(EventKind::CallEvent, &EVENT_FIELDS),
        }
    }
}

impl Inputs {
    /// Whether both inputs have a fast reader (a schema change that the
    /// reader cannot follow turns it off; the tests notice).
    #[cfg(test)]
    pub fn fast(&self) -> bool {
        self.launch.is_some() && self.event.is_some()
    }

    pub fn launch<'a>(&self, bytes: &'a [u8]) -> Result<LaunchIn<'a>, DecodeError> {
        let fast = self.launch.as_ref().and_then(|l| l.read(bytes));
        match fast.and_then(launch_from) {
            Some(launch) => Ok(launch),
            None => CallLaunch::decode(bytes).map(LaunchIn::from),
        }
    }

    pub fn event<'a>(&self, bytes: &'a [u8]) -> Result<EventIn<'a>, DecodeError> {
        let fast = self.event.as_ref().and_then(|l| l.read(bytes));
        match fast.and_then(event_from) {
            Some(event) => Ok(event),
            None => CallEvent::decode(bytes).map(EventIn::from),
        }
    }
}

fn launch_from(v: [Val<'_>; 11]) -> Option<LaunchIn<'_>> {
    let [event_id, tenant_id, occurred_at, correlation_id, launch_id, job_id, contact_id, campaign_id, status, provider, provider_call_id] =
        v;
    Some(LaunchIn {
        event_id: event_id.uuid()?,
        tenant_id: tenant_id.str()?.into(),
        occurred_at_ms: occurred_at.long()?,
        correlation_id: correlation_id.opt_uuid()?,
        launch_id: launch_id.uuid()?,
        job_id: job_id.uuid()?,
        contact_id: contact_id.str()?.into(),
        campaign_id: campaign_id.str()?.into(),
        status: by_symbol(
            LaunchStatus::ALL,
            LaunchStatus::as_str,
            LaunchStatus::Unknown,
            status.symbol()?,
        ),
        provider: provider.str()?.into(),
        provider_call_id: provider_call_id.opt_str()?.map(Cow::Borrowed),
    })
}

fn event_from(v: [Val<'_>; 11]) -> Option<EventIn<'_>> {
    let [event_id, tenant_id, occurred_at, provider, call_id, contact_id, launch_id, source, provider_status, outcome, answered_by] =
        v;
    Some(EventIn {
        event_id: event_id.uuid()?,
        tenant_id: tenant_id.str()?.into(),
        occurred_at_ms: occurred_at.long()?,
        provider: provider.str()?.into(),
        call_id: call_id.str()?.into(),
        contact_id: contact_id.str()?.into(),
        launch_id: launch_id.opt_uuid()?,
        source: by_symbol(
            CallEventSource::ALL,
            CallEventSource::as_str,
            CallEventSource::Unknown,
            source.symbol()?,
        ),
        provider_status: provider_status.str()?.into(),
        outcome: by_symbol(
            CallOutcome::ALL,
            CallOutcome::as_str,
            CallOutcome::Unknown,
            outcome.symbol()?,
        ),
        answered_by: answered_by.opt_str()?.map(Cow::Borrowed),
    })
}

impl From<CallLaunch> for LaunchIn<'static> {
    fn from(l: CallLaunch) -> Self {
        Self {
            event_id: l.event_id,
            tenant_id: l.tenant_id.into(),
            occurred_at_ms: l.occurred_at.timestamp_millis(),
            correlation_id: l.correlation_id,
            launch_id: l.launch_id,
            job_id: l.job_id,
            contact_id: l.contact_id.into(),
            campaign_id: l.campaign_id.into(),
            status: l.status,
            provider: l.provider.into(),
            provider_call_id: l.provider_call_id.map(Cow::Owned),
        }
    }
}

impl From<CallEvent> for EventIn<'static> {
    fn from(e: CallEvent) -> Self {
        Self {
            event_id: e.event_id,
            tenant_id: e.tenant_id.into(),
            occurred_at_ms: e.occurred_at.timestamp_millis(),
            provider: e.provider.into(),
            call_id: e.call_id.into(),
            contact_id: e.contact_id.into(),
            launch_id: e.launch_id,
            source: e.source,
            provider_status: e.provider_status.into(),
            outcome: e.outcome,
            answered_by: e.answered_by.map(Cow::Owned),
        }
    }
}

#[cfg(test)]
#[path = "inputs_tests.rs"]
mod tests;
