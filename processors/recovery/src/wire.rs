//! What the processor asks the effect handler and what comes back: a
//! read-only lookup of one call record, and its result. JSON, because these
//! bytes only live between a transaction and the next (in the runtime's
//! effect queue), never in a topic or the changelog.

use serde::{Deserialize, Serialize};

/// Look up one call at the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchRequest {
    /// The tenant whose rate limit the lookup counts against.
    pub tenant_id: String,
    pub provider: String,
    pub call_sid: String,
}

/// The call record as recovery needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The provider's status, verbatim (Twilio `status`: `completed`, `no-answer`, ...).
    pub status: String,
    pub answered_by: Option<String>,
    pub duration_seconds: Option<i32>,
    /// When the call ended, if it has.
    pub ended_at_ms: Option<i64>,
    /// The `SequenceNumber` the final status callback had (or would have had),
    /// as the provider writes it; read from the call's `Events` when the
    /// status is final. Part of the deterministic event id.
    pub sequence_number: Option<String>,
}

/// What a lookup found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum FetchResult {
    Found {
        record: CallRecord,
    },
    /// The provider has no such call (404).
    NotFound,
    /// The lookup failed; `retriable` when trying again can help (5xx,
    /// 429, timeouts, network), not for refusals or unreadable answers.
    Failed {
        retriable: bool,
        reason: String,
    },
}

impl FetchResult {
    pub fn encode(&self) -> Vec<u8> {
        // A plain enum of strings and numbers always serialises.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Bytes that do not decode read as a retriable failure: the lookup is
    /// read-only, so asking again is always safe.
    pub fn decode(bytes: &[u8]) -> Self {
        serde_json::from_slice(bytes).unwrap_or_else(|e| FetchResult::Failed {
            retriable: true,
            reason: format!("unreadable lookup result: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_round_trip_and_garbage_is_retriable() {
        let cases = [
            FetchResult::NotFound,
            FetchResult::Failed {
                retriable: false,
                reason: "401".into(),
            },
            FetchResult::Found {
                record: CallRecord {
                    status: "completed".into(),
                    answered_by: Some("human".into()),
                    duration_seconds: Some(30),
                    ended_at_ms: Some(1),
                    sequence_number: Some("3".into()),
                },
            },
        ];
        for case in cases {
            assert_eq!(FetchResult::decode(&case.encode()), case);
        }
        assert!(matches!(
            FetchResult::decode(b"{"),
            FetchResult::Failed {
                retriable: true,
                ..
            }
        ));
    }
}
