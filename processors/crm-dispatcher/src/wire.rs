//! What travels between the processor and the effect handler: the request
//! (an [`EffectCall`], JSON in `EffectRequest::payload`) and what came of it
//! (an [`Outcome`], JSON in `EffectResult::payload`), plus the effect id,
//! which names the command and the step it belongs to.
//!
//! Guarantee: an [`Outcome`] says whether the request can have reached the
//! CRM. `Expired` and `Unreachable` sent nothing; `Unanswered` may have been
//! applied; `Refused` is the CRM's answer. The state machine relies on it.

use std::collections::BTreeMap;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};

/// One request to the CRM, with the time after which it must not be sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectCall {
    /// Picks the bearer token (and so the rate limit).
    pub tenant_id: String,
    /// Wall-clock ms: past it, the handler does not send and answers `Expired`.
    pub not_after_ms: i64,
    pub request: CrmRequest,
}

/// A CRM v3 request, in HubSpot's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CrmRequest {
    /// `POST /crm/v3/objects/{object_type}`, associated with the contact.
    Create {
        object_type: String,
        properties: BTreeMap<String, String>,
        contact_id: String,
        association_type_id: u32,
    },
    /// `PATCH /crm/v3/objects/{object_type}/{object_id}`.
    Update {
        object_type: String,
        object_id: String,
        properties: BTreeMap<String, String>,
    },
    /// `POST /crm/v3/objects/{object_type}/search` for `callstream_op_id = op_id`.
    Search { object_type: String, op_id: String },
}

/// A path segment keeps only RFC 3986's unreserved characters as they are;
/// everything else (`/`, `?`, `#`, `%`, `\`, spaces, controls, non-ASCII) is
/// percent-encoded, so data from a command is always exactly one segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A value that cannot be one URL path segment: empty, `.` or `..` (URL
/// parsers resolve dot segments, encoded or not, so the request would go
/// to another resource).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the CRM {what} {value:?} cannot be a URL path segment")]
pub struct Unaddressable {
    pub what: &'static str,
    pub value: String,
}

/// `value` as one percent-encoded path segment.
pub fn segment(what: &'static str, value: &str) -> Result<String, Unaddressable> {
    if matches!(value, "" | "." | "..") {
        return Err(Unaddressable {
            what,
            value: value.to_owned(),
        });
    }
    Ok(utf8_percent_encode(value, SEGMENT).to_string())
}

impl CrmRequest {
    /// The HTTP method and path, relative to the base URL, with every
    /// segment that comes from data percent-encoded.
    pub fn method_and_path(&self) -> Result<(&'static str, String), Unaddressable> {
        Ok(match self {
            CrmRequest::Create { object_type, .. } => {
                let object_type = segment("object type", object_type)?;
                ("POST", format!("/crm/v3/objects/{object_type}"))
            }
            CrmRequest::Update {
                object_type,
                object_id,
                ..
            } => {
                let object_type = segment("object type", object_type)?;
                let object_id = segment("object id", object_id)?;
                (
                    "PATCH",
                    format!("/crm/v3/objects/{object_type}/{object_id}"),
                )
            }
            CrmRequest::Search { object_type, .. } => {
                let object_type = segment("object type", object_type)?;
                ("POST", format!("/crm/v3/objects/{object_type}/search"))
            }
        })
    }

    /// Whether this request writes (the write switch and shadow mode apply).
    pub fn is_write(&self) -> bool {
        !matches!(self, CrmRequest::Search { .. })
    }
}

/// What came of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// A 2xx answer to a create or update, with the object's id.
    Written { status: u16, object_id: String },
    /// A search found the object carrying the operation id.
    Found { object_id: String },
    /// A search found nothing.
    NotFound,
    /// The CRM answered with an error status.
    Refused {
        status: u16,
        /// From `Retry-After`, in ms.
        retry_after_ms: Option<u64>,
        message: String,
    },
    /// Sent, and no usable answer (timeout, broken connection, unreadable
    /// body): a write may have been applied.
    Unanswered { message: String },
    /// Nothing was sent: the connection could not be made.
    Unreachable { message: String },
    /// Nothing was sent: `not_after_ms` passed while the request waited for
    /// the rate limiter or a free slot.
    Expired,
}

impl Outcome {
    pub fn encode(&self) -> Vec<u8> {
        // Serialising plain enums of strings and numbers cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Decodes a result payload; one that does not decode reads as an
    /// unanswered request, the conservative reading.
    pub fn decode(bytes: &[u8]) -> Self {
        serde_json::from_slice(bytes).unwrap_or_else(|e| Outcome::Unanswered {
            message: format!("unreadable effect result: {e}"),
        })
    }

    /// Whether the request went out (and counts as an attempt).
    pub fn was_sent(&self) -> bool {
        !matches!(self, Outcome::Expired | Outcome::Unreachable { .. })
    }

    /// The HTTP status the CRM answered with, if it answered.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Outcome::Written { status, .. } | Outcome::Refused { status, .. } => Some(*status),
            Outcome::Found { .. } | Outcome::NotFound => Some(200),
            _ => None,
        }
    }

    /// A short description for results and exceptions (never a body).
    pub fn describe(&self) -> String {
        match self {
            Outcome::Written { status, .. } => format!("written ({status})"),
            Outcome::Found { .. } => "found by search".into(),
            Outcome::NotFound => "not found by search".into(),
            Outcome::Refused {
                status, message, ..
            } => format!("CRM answered {status}: {message}"),
            Outcome::Unanswered { message } => format!("no answer: {message}"),
            Outcome::Unreachable { message } => format!("CRM unreachable: {message}"),
            Outcome::Expired => "not sent in time".into(),
        }
    }
}

/// The effect id of step `token` of operation `op_id`.
pub fn effect_id(op_id: &str, token: u32) -> String {
    format!("{op_id}/{token}")
}

/// The step token of an effect id, if it is one of ours.
pub fn token_of(effect_id: &str) -> Option<u32> {
    effect_id.rsplit_once('/')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_round_trip_and_garbage_reads_as_unanswered() {
        let outcomes = [
            Outcome::Written {
                status: 201,
                object_id: "7".into(),
            },
            Outcome::Found {
                object_id: "8".into(),
            },
            Outcome::NotFound,
            Outcome::Refused {
                status: 429,
                retry_after_ms: Some(1500),
                message: "slow down".into(),
            },
            Outcome::Unanswered {
                message: "timeout".into(),
            },
            Outcome::Unreachable {
                message: "refused".into(),
            },
            Outcome::Expired,
        ];
        for outcome in outcomes {
            assert_eq!(Outcome::decode(&outcome.encode()), outcome);
        }
        assert!(matches!(
            Outcome::decode(b"{nope"),
            Outcome::Unanswered { .. }
        ));
    }

    #[test]
    fn effect_ids_carry_the_step_token() {
        let id = effect_id("4b1d0c9e-0000-4000-8000-000000000001", 17);
        assert_eq!(token_of(&id), Some(17));
        assert_eq!(token_of("no-token"), None);
    }

    #[test]
    fn data_in_a_path_is_always_exactly_one_segment() {
        let cases = [
            ("123/../456", "123%2F..%2F456"),
            ("a?b", "a%3Fb"),
            ("a#b", "a%23b"),
            ("%2F", "%252F"),
            ("a b\\c", "a%20b%5Cc"),
            ("\u{1}", "%01"),
            ("Zoë", "Zo%C3%AB"),
            ("c-1.x_y~z", "c-1.x_y~z"),
            ("...", "..."),
        ];
        for (id, want) in cases {
            let request = CrmRequest::Update {
                object_type: "contacts".into(),
                object_id: id.into(),
                properties: BTreeMap::new(),
            };
            assert_eq!(
                request.method_and_path(),
                Ok(("PATCH", format!("/crm/v3/objects/contacts/{want}"))),
                "{id:?}"
            );
        }
    }

    #[test]
    fn an_id_that_cannot_be_a_segment_is_refused() {
        for id in ["", ".", ".."] {
            let request = CrmRequest::Update {
                object_type: "contacts".into(),
                object_id: id.into(),
                properties: BTreeMap::new(),
            };
            assert!(request.method_and_path().is_err(), "{id:?}");
        }
    }

    #[test]
    fn only_sent_requests_count_as_attempts() {
        let cases = [
            (Outcome::Expired, false),
            (
                Outcome::Unreachable {
                    message: String::new(),
                },
                false,
            ),
            (
                Outcome::Unanswered {
                    message: String::new(),
                },
                true,
            ),
            (Outcome::NotFound, true),
        ];
        for (outcome, sent) in cases {
            assert_eq!(outcome.was_sent(), sent, "{outcome:?}");
        }
    }
}
