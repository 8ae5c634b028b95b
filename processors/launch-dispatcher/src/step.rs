//! The vocabulary of the state machine: what a decision may depend on
//! ([`Env`]) and what one transition asks for ([`Step`]: the ledger write,
//! notices to emit, an effect, the step timer), plus why an event was
//! ignored. Plain data; `machine` makes the decisions, `processor` applies them.

use crate::config::DispatchPolicy;
use crate::ledger::{Entry, Outcome};
use crate::wire::EffectCall;

/// What a decision may depend on besides the entry.
#[derive(Debug, Clone)]
pub struct Env<'a> {
    pub now_ms: i64,
    /// Shadow mode for the launch's tenant, read from `control` now.
    pub shadow: bool,
    /// The pause covering the launch's tenant or campaign, read from
    /// `control` now (`system_paused`, `campaign_paused`), if one does.
    pub pause: Option<&'static str>,
    /// The tenant's own calling rules and overrides, read from `control` now.
    pub calling_rules: std::sync::Arc<callstream_kit::calling_rules::TenantCallingRules>,
    /// Every call placed to the person within the tenant's cap subject (ms since the
    /// epoch, oldest first): the contact's own count on the command, and the calls this
    /// dispatcher placed to the launch's number for other contacts.
    pub placed_calls_ms: Vec<i64>,
    pub policy: &'a DispatchPolicy,
    /// The adapter's name; a launch asking for another provider fails.
    pub provider: &'a str,
    /// Whether the adapter has a caller id for launches that name none.
    pub has_default_from: bool,
}

/// Where the launch's step timer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerChange {
    Keep,
    Set(i64),
}

/// What happens to the ledger entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    Keep,
    Put(Box<Entry>),
    /// The retention after `Done` has passed.
    Delete,
}

/// Something to tell the world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A `call-launch` with this outcome (a failure also opens an exception).
    Final(Outcome),
    /// A `call-launch` of status `ambiguous`: reconciliation starts.
    Ambiguous {
        reason: String,
        detail: Option<String>,
    },
    /// An audit event: what a reconciliation found.
    Reconciled { detail: String },
}

/// One transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub store: Store,
    pub notices: Vec<Notice>,
    pub effect: Option<EffectCall>,
    pub timer: TimerChange,
    /// Why nothing happened, for the log and the metrics.
    pub ignored: Option<Ignored>,
}

/// Why an event changed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// A command for a launch id already in the ledger.
    Duplicate,
    /// The provider reports another call for a finished launch: the one
    /// thing that must never happen. Logged as an error and counted.
    SecondCall,
    /// A reply after the launch finished.
    AfterFinish,
    /// A reply to an earlier step.
    Stale,
    /// The handler could not read the request; the step timer reconciles.
    Refused,
}

impl Ignored {
    pub fn as_str(self) -> &'static str {
        match self {
            Ignored::Duplicate => "duplicate launch command",
            Ignored::SecondCall => "SECOND CALL reported for a finished launch",
            Ignored::AfterFinish => "reply after the launch finished",
            Ignored::Stale => "reply to an earlier step",
            Ignored::Refused => "effect refused; the step timer reconciles",
        }
    }
}

impl Step {
    pub(crate) fn ignore(why: Ignored) -> Self {
        Self {
            store: Store::Keep,
            notices: Vec::new(),
            effect: None,
            timer: TimerChange::Keep,
            ignored: Some(why),
        }
    }

    pub(crate) fn put(entry: Entry) -> Self {
        Self {
            store: Store::Put(Box::new(entry)),
            notices: Vec::new(),
            effect: None,
            timer: TimerChange::Keep,
            ignored: None,
        }
    }

    pub(crate) fn notice(mut self, notice: Notice) -> Self {
        self.notices.insert(0, notice);
        self
    }
}
