//! The invariant, by property test: whatever the provider answers, however
//! answers are lost, however often the dispatcher restarts and the clock
//! jumps, a launch never has two calls; and once the provider behaves, it
//! ends `accepted` with the one call placed, or `failed` with none placed
//! (or, after a reconciliation that could not tell, `failed` for a person).
//!
//! The provider is a model that keeps the calls it placed and answers
//! lookups truthfully (or fails them); it honours the one promise the
//! effect handler makes: nothing is sent after a request's send deadline.
//! Its create answers are HTTP answers classified by the Twilio adapter,
//! among them a 502 or 504 after the call was placed (an edge in front of
//! the platform), which must be looked up, never created again.

mod support;

use callstream_launch_dispatcher::ledger::{FailureKind, Outcome, Phase};
use callstream_launch_dispatcher::provider::twilio::classify_create;
use callstream_launch_dispatcher::provider::{CreateOutcome, LookupOutcome};
use callstream_launch_dispatcher::wire::{EffectCall, EffectReply};
use callstream_launch_dispatcher::LaunchDispatcher;
use callstream_runtime::{Clock, TestDriver};
use callstream_schemas::LaunchStatus;
use proptest::prelude::*;
use reqwest::StatusCode;
use support::*;

#[derive(Debug, Clone)]
enum Action {
    /// Answer the oldest pending effect, the way `kind` picks.
    Answer(u8),
    /// Move the wall clock.
    Advance(i64),
    /// Crash: pending creates still within their deadline reach the
    /// provider (or not), their answers are lost, state is restored.
    Crash { reached: bool },
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => any::<u8>().prop_map(Action::Answer),
        2 => (0i64..40_000).prop_map(Action::Advance),
        1 => any::<bool>().prop_map(|reached| Action::Crash { reached }),
    ]
}

/// The calls the model provider placed for the launch.
#[derive(Default)]
struct Provider {
    placed: Vec<String>,
}

impl Provider {
    fn place(&mut self) -> String {
        let id = format!("CA{}", self.placed.len() + 1);
        self.placed.push(id.clone());
        id
    }

    fn truth(&self) -> LookupOutcome {
        match self.placed.first() {
            Some(id) => LookupOutcome::Found {
                call_id: id.clone(),
                status: None,
            },
            None => LookupOutcome::NotFound,
        }
    }
}

/// Answers the oldest pending effect; `None` when there is none. `kind`
/// None: a well-behaved provider.
fn answer(
    driver: &mut TestDriver<LaunchDispatcher>,
    provider: &mut Provider,
    kind: Option<u8>,
) -> bool {
    let Some((request, call)) = pending(driver).into_iter().next() else {
        return false;
    };
    let now = driver.clock().now_ms();
    let reply = match &call {
        EffectCall::Create {
            seq, send_by_ms, ..
        } => {
            let outcome = if now > *send_by_ms {
                Some(CreateOutcome::NotSent {
                    reason: "send_deadline".into(),
                })
            } else {
                // What reaches the dispatcher is an HTTP answer, classified as
                // the Twilio adapter classifies it; the model knows whether a
                // call was placed behind it.
                let http = |code: u16, body: &[u8]| {
                    let status = StatusCode::from_u16(code).expect("status");
                    Some(classify_create(status, body))
                };
                match kind.map(|k| k % 10) {
                    None | Some(0) => {
                        let sid = provider.place();
                        http(201, format!(r#"{{"sid":"{sid}"}}"#).as_bytes())
                    }
                    // Refused before anything was placed.
                    Some(1) => http(503, b""),
                    Some(2) => http(400, b""),
                    Some(9) => http(429, b""),
                    // Placed, then an edge in front of the platform lost or
                    // timed out on its answer.
                    Some(7) => {
                        provider.place();
                        http(502, b"<html>Bad Gateway</html>")
                    }
                    Some(8) => {
                        provider.place();
                        http(504, b"")
                    }
                    Some(3) => {
                        provider.place();
                        Some(CreateOutcome::Ambiguous {
                            reason: "timeout".into(),
                            detail: None,
                        })
                    }
                    Some(4) => Some(CreateOutcome::Ambiguous {
                        reason: "transport".into(),
                        detail: None,
                    }),
                    // The answer is lost, the call placed or not.
                    Some(5) => {
                        provider.place();
                        None
                    }
                    _ => None,
                }
            };
            outcome.map(|outcome| EffectReply::Create { seq: *seq, outcome })
        }
        EffectCall::Lookup {
            seq, send_by_ms, ..
        } => {
            let outcome = if now > *send_by_ms {
                LookupOutcome::NotSent {
                    reason: "send_deadline".into(),
                }
            } else if kind.is_some_and(|k| k % 3 == 2) {
                LookupOutcome::Failed {
                    reason: "http_503".into(),
                    detail: None,
                }
            } else {
                provider.truth()
            };
            Some(EffectReply::Lookup { seq: *seq, outcome })
        }
    };
    match reply {
        Some(reply) => driver.complete_effect(request, reply.encode()),
        // The partition moved away: every answer in flight for it is dropped.
        None => drop(driver.take_effects()),
    }
    true
}

fn run(actions: &[Action]) -> Result<(), TestCaseError> {
    let mut driver = driver();
    let mut provider = Provider::default();
    let cmd = command(1);
    pipe(&mut driver, &cmd);
    for action in actions {
        match action {
            Action::Answer(kind) => {
                answer(&mut driver, &mut provider, Some(*kind));
            }
            Action::Advance(ms) => driver.advance_wall_clock_ms(*ms),
            Action::Crash { reached } => {
                let now = driver.clock().now_ms();
                for (_, call) in pending(&driver) {
                    if let EffectCall::Create { send_by_ms, .. } = call {
                        if *reached && now <= send_by_ms {
                            provider.place();
                        }
                    }
                }
                let _ = driver.take_effects();
                driver.restart();
            }
        }
        prop_assert!(
            provider.placed.len() <= 1,
            "two calls after {action:?}: {:?}",
            provider.placed
        );
    }
    // Now the provider behaves: the launch must finish.
    for _ in 0..200 {
        if entry(&driver, &cmd.launch_id).is_some_and(|e| e.is_done()) {
            break;
        }
        if !answer(&mut driver, &mut provider, None) {
            driver.advance_wall_clock_ms(30_000);
        }
        prop_assert!(
            provider.placed.len() <= 1,
            "two calls: {:?}",
            provider.placed
        );
    }
    let entry = entry(&driver, &cmd.launch_id).expect("ledger entry");
    let Phase::Done { outcome } = &entry.phase else {
        return Err(TestCaseError::fail(format!("not finished: {entry:?}")));
    };
    match outcome {
        Outcome::Accepted { call_id, .. } => {
            prop_assert_eq!(&provider.placed, &vec![call_id.clone()])
        }
        Outcome::Failed { failure } if failure.kind != FailureKind::Unresolved => {
            prop_assert!(
                provider.placed.is_empty(),
                "failed ({failure:?}) but placed {:?}",
                provider.placed
            )
        }
        Outcome::Held { .. } => prop_assert!(
            provider.placed.is_empty(),
            "held but placed {:?}",
            provider.placed
        ),
        Outcome::Failed { .. } | Outcome::Shadow => {}
    }
    let statuses: Vec<LaunchStatus> = launches(&driver).iter().map(|l| l.status).collect();
    let finals = statuses
        .iter()
        .filter(|s| **s != LaunchStatus::Ambiguous)
        .count();
    let ambiguous = statuses.len() - finals;
    prop_assert_eq!(finals, 1, "{:?}", statuses);
    prop_assert!(ambiguous <= 1, "{:?}", statuses);
    prop_assert_eq!(statuses.last().copied(), Some(status_of(outcome)));
    Ok(())
}

fn status_of(outcome: &Outcome) -> LaunchStatus {
    match outcome {
        Outcome::Accepted { .. } => LaunchStatus::Accepted,
        Outcome::Failed { .. } => LaunchStatus::Failed,
        Outcome::Shadow => LaunchStatus::Shadow,
        Outcome::Held { .. } => LaunchStatus::Held,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_launch_never_has_two_calls_and_always_finishes(actions in proptest::collection::vec(action(), 0..40)) {
        run(&actions)?;
    }
}
