//! What the dispatcher keeps in its state stores (JSON values, restored
//! from their changelogs after a crash or a move):
//!
//! - `contacts`: per contact, the command being carried out (if any) and
//!   where it stands, the range of commands queued behind it, and the fact
//!   time of every property applied (for the stale check).
//! - `queue`: the commands waiting behind a contact's active one, keyed by
//!   contact and arrival number, so a long queue costs one small write per
//!   command rather than a rewrite of the whole queue.
//! - `ledger`: the effect ledger, per operation id: its outcome and the CRM
//!   object it made or found.
//! - `suppressed`: the commands suppressed by the write switch, Avro as
//!   received, keyed by operation id: replayable, and readable on the
//!   store's compacted changelog topic with any Avro tool.
//! - `retryable`: per open `crm_failed` exception, the operation it was
//!   opened for, so an operator's retry (which names the exception) finds
//!   the failed command the ledger keeps.
//!
//! Guarantees: a contact has at most one command in flight, and the queue
//! holds exactly the arrival numbers `head_seq..next_seq`, in order; a
//! failed operation's ledger entry keeps its command and names its open
//! exception, and `retryable` holds exactly those open exceptions.

use std::collections::BTreeMap;

use callstream_schemas::CrmCommand;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub const CONTACTS: &str = "contacts";
pub const QUEUE: &str = "queue";
pub const LEDGER: &str = "ledger";
pub const SUPPRESSED: &str = "suppressed";
pub const RETRYABLE: &str = "retryable";
/// Every store the dispatcher declares (`Processor::stores`).
pub const STORES: &[&str] = &[CONTACTS, QUEUE, LEDGER, SUPPRESSED, RETRYABLE];

/// One contact's dispatch state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContactState {
    /// The command being carried out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<Active>,
    /// Arrival number of the first queued command.
    #[serde(default)]
    pub head_seq: u64,
    /// Arrival number the next queued command gets.
    #[serde(default)]
    pub next_seq: u64,
    /// Per property, the fact time (ms) of the value applied last.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub applied_at: BTreeMap<String, i64>,
}

impl ContactState {
    pub fn queued(&self) -> u64 {
        self.next_seq.saturating_sub(self.head_seq)
    }

    /// Nothing to remember: no command and no applied fact times.
    pub fn is_empty(&self) -> bool {
        self.active.is_none() && self.queued() == 0 && self.applied_at.is_empty()
    }
}

/// Where the active command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// A write was asked for; its result is awaited.
    Writing,
    /// A search for the operation id was asked for; its result is awaited.
    Searching,
    /// Waiting for the retry timer; then `resume`.
    Parked { resume: Resume },
}

/// What a parked command does when its timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resume {
    Write,
    Search,
}

/// The command a contact is carrying out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Active {
    pub command: CrmCommand,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Bumped on every step; effect ids and timer payloads carry it, so a
    /// late result or timer of an earlier step is recognised and ignored.
    pub token: u32,
    pub phase: Phase,
    /// Requests sent for this command (the result's `attempts`).
    pub requests: u32,
    /// Failed requests so far (the retry bound counts these).
    pub failures: u32,
    /// A create may have reached the CRM: search before writing again.
    pub maybe_applied: bool,
    /// When (wall-clock ms) the create that may have landed was asked for:
    /// its settle window runs from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maybe_applied_at: Option<i64>,
    /// When (wall-clock ms) the last write was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_write_at: Option<i64>,
    /// The contact properties to patch (fresh ones only), for updates.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A queued command, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Queued {
    pub command: CrmCommand,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// How an operation ended, as the ledger records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Settled {
    Applied,
    AlreadyApplied,
    SkippedStale,
    Suppressed,
    Shadow,
    Failed,
}

impl Settled {
    /// Whether the CRM holds the write (or never needs it), so a command
    /// with this operation id again is a duplicate. Suppressed, shadow and
    /// failed ones are carried out when they come again (a replay, an
    /// operator's retry).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Settled::Applied | Settled::AlreadyApplied | Settled::SkippedStale
        )
    }
}

/// One effect-ledger entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    pub settled: Settled,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
    /// A create that failed may still have been applied: a retry searches first.
    #[serde(default)]
    pub maybe_applied: bool,
    /// When that create was asked for: a retry inside its settle window
    /// does not trust a search that finds nothing either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maybe_applied_at: Option<i64>,
    /// Results emitted for this operation so far (numbers their event ids).
    #[serde(default)]
    pub results: u32,
    /// Exceptions opened for it so far.
    #[serde(default)]
    pub exceptions: u32,
    /// Wall-clock ms of the last change.
    pub at_ms: i64,
    /// A failed command as received, kept so an operator can retry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<Queued>,
    /// The `crm_failed` exception open for it, until it is retried or the
    /// command settles otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_exception: Option<Uuid>,
}

/// A `retryable` entry: the failed operation an open exception is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retryable {
    pub operation_id: Uuid,
    pub contact_id: String,
}

/// The `queue` key of `contact`'s command number `seq`: the contact, a
/// zero byte, the number big-endian. Unique: equal keys have equal lengths,
/// so equal contacts and numbers.
pub fn queue_key(contact: &[u8], seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(contact.len() + 9);
    key.extend_from_slice(contact);
    key.push(0);
    key.extend_from_slice(&seq.to_be_bytes());
    key
}
