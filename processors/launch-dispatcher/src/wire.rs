//! The bytes between the processor and its effect handler: what to do
//! (create or look up, with the step's sequence number and send deadline)
//! and what came of it. JSON, because both ends are this crate and a person
//! reading a stuck effect in a log should be able to.
//!
//! Every reply names the sequence number of the request it answers, so a
//! late answer to an earlier step is recognised and never mistaken for the
//! current one.

use serde::{Deserialize, Serialize};

use crate::provider::{CreateCall, CreateOutcome, FindCall, LookupOutcome};

/// A request to the effect handler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum EffectCall {
    Create {
        seq: u32,
        /// Past this wall-clock time (ms) the request must not be sent.
        send_by_ms: i64,
        call: CreateCall,
    },
    Lookup {
        seq: u32,
        send_by_ms: i64,
        find: FindCall,
    },
}

/// What the effect handler answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum EffectReply {
    Create {
        seq: u32,
        outcome: CreateOutcome,
    },
    Lookup {
        seq: u32,
        outcome: LookupOutcome,
    },
    /// The handler could not read the request (a version mismatch); nothing
    /// was sent.
    Refused {
        reason: String,
    },
}

impl EffectCall {
    pub fn encode(&self) -> Vec<u8> {
        // Plain structs of strings and numbers always serialise.
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

impl EffectReply {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn requests_and_replies_round_trip() {
        let call = EffectCall::Create {
            seq: 3,
            send_by_ms: 1_700_000_000_000,
            call: CreateCall {
                launch_id: Uuid::from_u128(7),
                tenant_id: "acme".into(),
                contact_id: "c-1".into(),
                campaign_id: "enrol".into(),
                to: "+15551230000".into(),
                from: None,
            },
        };
        assert_eq!(EffectCall::decode(&call.encode()).unwrap(), call);
        let replies = [
            EffectReply::Create {
                seq: 3,
                outcome: CreateOutcome::Accepted {
                    call_id: "CA1".into(),
                },
            },
            EffectReply::Lookup {
                seq: 4,
                outcome: LookupOutcome::Unresolved {
                    candidates: vec!["CA1".into(), "CA2".into()],
                },
            },
            EffectReply::Refused {
                reason: "bad".into(),
            },
        ];
        for reply in replies {
            assert_eq!(EffectReply::decode(&reply.encode()).unwrap(), reply);
        }
        assert!(EffectReply::decode(b"{\"op\":\"launch_missiles\"}").is_err());
    }
}
