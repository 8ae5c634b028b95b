//! The voice platform behind a trait: create a call, and find one again.
//! Twilio is the adapter now ([`twilio::Twilio`]); an AI voice platform's
//! REST API can follow behind the same two methods.
//!
//! An adapter's one duty beyond HTTP is to classify honestly: whatever may
//! have placed a call is [`CreateOutcome::Ambiguous`], never `Transient`,
//! because only `Transient` and `NotSent` are retried without looking first.

pub mod matching;
pub mod twilio;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One call to place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateCall {
    /// The operation id: carried in the status callback URL, so the call can
    /// be recognised at the provider and its callbacks are attributed.
    pub launch_id: Uuid,
    pub tenant_id: String,
    pub contact_id: String,
    pub campaign_id: String,
    /// E.164 number to call.
    pub to: String,
    /// Caller id; `None`: the adapter's configured default.
    pub from: Option<String>,
}

/// One call to look for: placed for `launch_id` to `to`, not before `since_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindCall {
    pub launch_id: Uuid,
    pub to: String,
    /// Lower bound of the call's creation time (ms since the epoch), with
    /// room for clock skew already taken off.
    pub since_ms: i64,
}

/// What a create request came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CreateOutcome {
    /// The platform took the call.
    Accepted { call_id: String },
    /// Refused for good (4xx other than 429): retrying cannot help.
    Permanent {
        reason: String,
        detail: Option<String>,
    },
    /// Failed before any call was placed (5xx, 429, connection refused):
    /// retry after a delay.
    Transient {
        reason: String,
        detail: Option<String>,
    },
    /// The request was (or may have been) sent and no clear answer came
    /// (timeout, broken connection, unreadable 2xx): look it up first.
    Ambiguous {
        reason: String,
        detail: Option<String>,
    },
    /// The request never left this process (it waited past its send
    /// deadline): nothing can have been placed.
    NotSent { reason: String },
}

/// What a lookup found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LookupOutcome {
    /// The call placed for the launch.
    Found {
        call_id: String,
        status: Option<String>,
    },
    /// No call for the launch exists: it was never placed.
    NotFound,
    /// Several calls could be the launch's and none says which: a person decides.
    Unresolved { candidates: Vec<String> },
    /// The lookup itself failed; try again later.
    Failed {
        reason: String,
        detail: Option<String>,
    },
    /// The lookup never left this process.
    NotSent { reason: String },
}

impl CreateOutcome {
    /// The outcome's kind, for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            CreateOutcome::Accepted { .. } => "accepted",
            CreateOutcome::Permanent { .. } => "permanent",
            CreateOutcome::Transient { .. } => "transient",
            CreateOutcome::Ambiguous { .. } => "ambiguous",
            CreateOutcome::NotSent { .. } => "not_sent",
        }
    }
}

impl LookupOutcome {
    /// The outcome's kind, for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            LookupOutcome::Found { .. } => "found",
            LookupOutcome::NotFound => "not_found",
            LookupOutcome::Unresolved { .. } => "unresolved",
            LookupOutcome::Failed { .. } => "failed",
            LookupOutcome::NotSent { .. } => "not_sent",
        }
    }
}

/// A voice platform.
pub trait VoiceProvider: Send + Sync + 'static {
    /// The adapter's name, as `CallLaunch.provider` records it.
    fn name(&self) -> &'static str;

    /// Places one call. Never panics; every failure is an outcome.
    fn create_call(&self, call: CreateCall) -> BoxFuture<'static, CreateOutcome>;

    /// Looks for the call placed for a launch (read-only).
    fn find_call(&self, find: FindCall) -> BoxFuture<'static, LookupOutcome>;
}
