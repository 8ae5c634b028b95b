//! The fuzz harness of the CRM dispatcher: arbitrary CRM answers (status,
//! `Retry-After`, body) through the classifier the HTTP client runs
//! ([`client::answer`]), then through what the dispatcher does with the
//! outcome (the result encoding, the retry decision, the rate-limit hold),
//! panicking when an invariant breaks (which is how libFuzzer, and the
//! corpus replay test, see a failure).
//!
//! Input layout, so corpus files stay readable: `request \n status \n
//! Retry-After \n body`, the body taking the rest (newlines included, any
//! bytes). `request` is `create`, `update` or `search` (anything else is a
//! create); a status that is not a decimal `u16` is 200; an absent
//! `Retry-After` line, or bytes no header value can hold, is no header.
//!
//! This file is compiled twice: as the fuzz crate's library (for the
//! libFuzzer target, on nightly) and as a module of the dispatcher's
//! `fuzz_corpus` test (on stable), so both exercise the same code.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use callstream_crm_dispatcher::client::{self, MAX_MESSAGE, MAX_RETRY_AFTER_MS};
use callstream_crm_dispatcher::config::{DispatchPolicy, RateLimit};
use callstream_crm_dispatcher::handler::hold_back;
use callstream_crm_dispatcher::limiter::Limiters;
use callstream_crm_dispatcher::policy::{decide, FailReason, Next, Sent};
use callstream_crm_dispatcher::wire::{CrmRequest, Outcome};
use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

const TOKEN: &str = "fuzz-token";

/// How far an input got, so the corpus replay can check that its seeds
/// still cover each kind of answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reached {
    /// The CRM refused (a status outside 2xx).
    pub refused: bool,
    /// A 2xx whose body read as an answer (written, found, not found).
    pub understood: bool,
    /// A `Retry-After` was honoured.
    pub retry_after: bool,
}

/// Splits `data` into `N` fields at the first `N - 1` newlines; the last
/// field is the rest. Missing fields are `None`.
pub fn fields<const N: usize>(data: &[u8]) -> [Option<&[u8]>; N] {
    let mut out = [None; N];
    let mut rest = Some(data);
    for (i, slot) in out.iter_mut().enumerate() {
        let Some(current) = rest else { break };
        if i + 1 == N {
            *slot = Some(current);
            break;
        }
        match current.iter().position(|b| *b == b'\n') {
            Some(at) => {
                *slot = Some(&current[..at]);
                rest = Some(&current[at + 1..]);
            }
            None => {
                *slot = Some(current);
                rest = None;
            }
        }
    }
    out
}

fn request(name: Option<&[u8]>) -> (CrmRequest, Sent) {
    match name.unwrap_or_default() {
        b"update" => (
            CrmRequest::Update {
                object_type: "contacts".into(),
                object_id: "c-1".into(),
                properties: BTreeMap::from([("firstname".into(), "Ana".into())]),
            },
            Sent::Update,
        ),
        b"search" => (
            CrmRequest::Search {
                object_type: "notes".into(),
                op_id: "op-1".into(),
            },
            Sent::Search,
        ),
        _ => (
            CrmRequest::Create {
                object_type: "notes".into(),
                properties: BTreeMap::new(),
                contact_id: "c-1".into(),
                association_type_id: 202,
            },
            Sent::Create,
        ),
    }
}

/// A CRM answer: `request \n status \n Retry-After \n body`.
pub fn crm_answer(data: &[u8]) -> Reached {
    let [name, status, retry_after, body] = fields::<4>(data);
    let (request, sent) = request(name);
    let status = std::str::from_utf8(status.unwrap_or_default())
        .ok()
        .and_then(|s| s.parse::<u16>().ok())
        .unwrap_or(200);
    let mut headers = HeaderMap::new();
    if let Some(value) = retry_after.and_then(|v| HeaderValue::from_bytes(v).ok()) {
        headers.insert(RETRY_AFTER, value);
    }
    let body = body.unwrap_or_default();

    // The classifier: any answer gives an outcome that fits its status.
    let outcome = client::answer(&request, status, &headers, body);
    let mut reached = Reached::default();
    match &outcome {
        Outcome::Refused {
            status: got,
            retry_after_ms,
            message,
        } => {
            assert!(!(200..300).contains(&status), "a {status} was refused");
            assert_eq!(*got, status);
            assert!(message.len() <= MAX_MESSAGE, "{} bytes", message.len());
            if let Some(ms) = retry_after_ms {
                assert!(*ms <= MAX_RETRY_AFTER_MS, "Retry-After of {ms} ms");
                assert!(
                    headers.contains_key(RETRY_AFTER),
                    "a Retry-After from nowhere"
                );
            }
            reached.refused = true;
            reached.retry_after = retry_after_ms.is_some();
        }
        Outcome::Written { status: got, .. } => {
            assert_eq!(*got, status);
            assert!(sent != Sent::Search, "a search answer read as a write");
            reached.understood = true;
        }
        Outcome::Found { .. } | Outcome::NotFound => {
            assert!(sent == Sent::Search, "a write answer read as a search");
            reached.understood = true;
        }
        Outcome::Unanswered { .. } => {
            assert!((200..300).contains(&status), "a {status} read as no answer");
        }
        other => panic!("an answer the CRM sent read as {other:?}"),
    }

    // The result the effect handler sends back decodes to the same outcome.
    assert_eq!(Outcome::decode(&outcome.encode()), outcome);
    let _ = outcome.describe();

    // The retry decision, at any failure count.
    let policy = DispatchPolicy::default();
    let longest = policy
        .retry
        .max_delay
        .max(policy.settle)
        .max(policy.search_interval)
        .max(Duration::from_millis(MAX_RETRY_AFTER_MS));
    let windows = [None, Some(Duration::ZERO), Some(policy.settle_window)];
    for (failures, settle_left) in [0, 1, policy.retry.max_failures, u32::MAX]
        .into_iter()
        .flat_map(|f| windows.map(|w| (f, w)))
    {
        let decision = decide(
            sent,
            &outcome,
            failures,
            u64::from(status),
            &policy,
            settle_left,
        );
        match (&outcome, &decision.next) {
            (Outcome::Refused { status, .. }, next) if !matches!(status, 408 | 429 | 500..=599) => {
                assert_eq!(
                    *next,
                    Next::Fail {
                        reason: FailReason::Rejected
                    },
                    "a {status} was not final"
                );
            }
            (
                Outcome::Refused {
                    retry_after_ms: Some(ms),
                    ..
                },
                Next::Park { delay, .. },
            ) => {
                assert!(
                    *delay >= Duration::from_millis(*ms),
                    "parked under Retry-After"
                );
            }
            _ => {}
        }
        if let Next::Park { delay, .. } = decision.next {
            assert!(delay <= longest, "parked for {delay:?}");
        }
    }

    // The rate-limit hold after a 429: however long, it holds back without
    // panicking, and a request due now does not pass while it lasts.
    let limiters = Limiters::new(
        RateLimit {
            max_requests: 0,
            ..RateLimit::default()
        },
        [TOKEN],
    );
    let held = hold_back(&limiters, TOKEN, &outcome, Duration::from_secs(1));
    assert_eq!(held.is_some(), outcome.http_status() == Some(429));
    let due = Instant::now();
    let passed = futures::executor::block_on(limiters.acquire(TOKEN, due));
    // A second between two statements is beyond any scheduling delay.
    if held.is_some_and(|wait| wait >= Duration::from_secs(1)) {
        assert!(!passed, "a request passed during a Retry-After of {held:?}");
    }
    reached
}

#[cfg(test)]
mod tests {
    use super::fields;

    #[test]
    fn fields_split_at_the_first_newlines_only() {
        assert_eq!(
            fields::<3>(b"a\nb\nc\nd"),
            [Some(&b"a"[..]), Some(b"b"), Some(b"c\nd")]
        );
        assert_eq!(fields::<3>(b"a"), [Some(&b"a"[..]), None, None]);
    }
}
