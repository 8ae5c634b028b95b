//! The dispatch state machine, pure: a ledger entry and an event (a command,
//! a due step timer, an effect's reply) in; the next entry, what to emit,
//! which effect to ask for and where the step timer goes, out. The
//! processor applies a [`Step`] to the context in one transaction.
//!
//! Guarantees (checked by the property test in `tests/state_machine_props.rs`):
//! - A create is asked for only from a state where no earlier create can
//!   have placed a call: a fresh launch, a transient failure (the provider
//!   said nothing was placed), a request that was never sent, or a lookup
//!   that found no call. Anything else that might have dialed is looked up.
//! - At most `retry.max_attempts` creates and `max_lookups` lookups in a row.
//! - `Done` is final: nothing after it changes the outcome or emits again.

use crate::backoff::seed_of;
use crate::config::ms;
use crate::ledger::{Entry, Failure, FailureKind, Launch, Outcome, Phase};
use crate::provider::{CreateCall, CreateOutcome, FindCall, LookupOutcome};
use crate::wire::{EffectCall, EffectReply};

pub use crate::step::{Env, Ignored, Notice, Step, Store, TimerChange};

/// A launch command arrived. A launch id already in the ledger is a
/// duplicate and changes nothing.
pub fn on_command(existing: Option<Entry>, launch: Launch, env: &Env<'_>) -> Step {
    if existing.is_some() {
        return Step::ignore(Ignored::Duplicate);
    }
    dial(Entry::new(launch), env)
}

/// The contact processor says the lead may no longer be called (a
/// restriction came after the command): no create is made from now on. A
/// launch with nothing in flight ends held at once with the restriction as
/// its reason; one whose create or lookup may be in flight ends when its
/// answer comes (accepted if the call was placed before: it cannot be
/// undone), and is never dialed again.
pub fn on_stop(mut entry: Entry, reason: String, env: &Env<'_>) -> Step {
    if entry.is_done() {
        return Step::ignore(Ignored::AfterFinish);
    }
    entry.stopped = Some(reason.clone());
    match entry.phase {
        Phase::RetryWait => {
            let detail = format!("{} after the launch was sent", reason.replace('_', " "));
            finish(entry, held(reason, detail), env)
        }
        _ => Step::put(entry),
    }
}

/// The launch's step timer is due.
pub fn on_timer(entry: Entry, env: &Env<'_>) -> Step {
    match entry.phase {
        // No answer to the create within its deadline: it may have placed a
        // call whose answer a crash lost. Look, don't dial.
        Phase::Dispatching { .. } => {
            let mut step = start_lookup(entry, env);
            if let Some(announce) = ambiguous(&mut step, "no_result", None) {
                step = step.notice(announce);
            }
            step
        }
        Phase::RetryWait => dial(entry, env),
        Phase::Reconciling { .. } | Phase::LookupWait => start_lookup(entry, env),
        // The retention has passed: forget the launch.
        Phase::Done { .. } => Step {
            store: Store::Delete,
            notices: Vec::new(),
            effect: None,
            timer: TimerChange::Keep,
            ignored: None,
        },
    }
}

/// An effect answered.
pub fn on_reply(entry: Entry, reply: EffectReply, env: &Env<'_>) -> Step {
    if let Phase::Done { outcome } = &entry.phase {
        return match (outcome, &reply) {
            (
                Outcome::Accepted { call_id, .. },
                EffectReply::Create {
                    outcome: CreateOutcome::Accepted { call_id: other },
                    ..
                }
                | EffectReply::Lookup {
                    outcome: LookupOutcome::Found { call_id: other, .. },
                    ..
                },
            ) if call_id != other => Step::ignore(Ignored::SecondCall),
            _ => Step::ignore(Ignored::AfterFinish),
        };
    }
    match reply {
        EffectReply::Refused { .. } => Step::ignore(Ignored::Refused),
        EffectReply::Create { seq, outcome } => on_create(entry, seq, outcome, env),
        EffectReply::Lookup { seq, outcome } => on_lookup(entry, seq, outcome, env),
    }
}

fn on_create(mut entry: Entry, seq: u32, outcome: CreateOutcome, env: &Env<'_>) -> Step {
    // An acceptance is the truth whenever it arrives, even late.
    if let CreateOutcome::Accepted { call_id } = outcome {
        return finish(
            entry,
            Outcome::Accepted {
                call_id,
                reconciled: false,
            },
            env,
        );
    }
    if entry.phase != (Phase::Dispatching { seq }) {
        return Step::ignore(Ignored::Stale);
    }
    match outcome {
        CreateOutcome::Accepted { .. } => Step::ignore(Ignored::Stale),
        CreateOutcome::Permanent { reason, detail } => {
            fail(entry, FailureKind::Launch, reason, detail, env)
        }
        CreateOutcome::Transient { reason, detail } => {
            if !env.policy.retry.may_retry(entry.attempts) {
                let detail = Some(gave_up(entry.attempts, &reason, detail.as_deref()));
                return fail(entry, FailureKind::Provider, reason, detail, env);
            }
            entry.last_error = Some((reason, detail));
            let delay = env
                .policy
                .retry
                .delay(entry.attempts, seed_of(&entry.launch.launch_id));
            wait(entry, Phase::RetryWait, env.now_ms + ms(delay))
        }
        CreateOutcome::NotSent { reason } => {
            // Nothing left this process: not an attempt.
            entry.attempts = entry.attempts.saturating_sub(1);
            entry.last_error = Some((reason, None));
            let delay = env.policy.retry.delay(1, seed_of(&entry.launch.launch_id));
            wait(entry, Phase::RetryWait, env.now_ms + ms(delay))
        }
        CreateOutcome::Ambiguous { reason, detail } => {
            // Kept as the cause should the lookups end in giving up.
            entry.last_error = Some((reason.clone(), detail.clone()));
            // Give the provider time to finish what it received, then look.
            let due = env.now_ms + ms(env.policy.settle);
            let mut step = wait(entry, Phase::LookupWait, due);
            if let Some(announce) = ambiguous(&mut step, &reason, detail) {
                step = step.notice(announce);
            }
            step
        }
    }
}

fn on_lookup(mut entry: Entry, seq: u32, outcome: LookupOutcome, env: &Env<'_>) -> Step {
    if let LookupOutcome::Found { call_id, status } = outcome {
        let detail = format!(
            "found call {call_id} ({}) after {} lookup(s)",
            status.as_deref().unwrap_or("status unknown"),
            entry.lookups
        );
        let outcome = Outcome::Accepted {
            call_id,
            reconciled: true,
        };
        return finish(entry, outcome, env).notice(Notice::Reconciled { detail });
    }
    if entry.phase != (Phase::Reconciling { seq }) {
        return Step::ignore(Ignored::Stale);
    }
    match outcome {
        LookupOutcome::Found { .. } => Step::ignore(Ignored::Stale),
        LookupOutcome::NotFound => {
            let detail = format!(
                "no call placed after {} attempt(s); {}",
                entry.attempts,
                if env.policy.retry.may_retry(entry.attempts) {
                    "dialing again"
                } else {
                    "attempts exhausted"
                }
            );
            entry.lookups = 0;
            if entry.last_error.is_none() {
                entry.last_error = Some(("not_placed".into(), None));
            }
            dial(entry, env).notice(Notice::Reconciled { detail })
        }
        LookupOutcome::Unresolved { candidates } => {
            let detail = Some(format!("candidate calls: {}", candidates.join(", ")));
            fail(
                entry,
                FailureKind::Unresolved,
                "reconcile_ambiguous".into(),
                detail,
                env,
            )
        }
        LookupOutcome::Failed { reason, detail } => {
            entry.last_error = Some((reason, detail));
            let delay = env
                .policy
                .retry
                .delay(entry.lookups, seed_of(&entry.launch.launch_id));
            wait(entry, Phase::LookupWait, env.now_ms + ms(delay))
        }
        LookupOutcome::NotSent { reason } => {
            entry.lookups = entry.lookups.saturating_sub(1);
            entry.last_error = Some((reason, None));
            let delay = env.policy.retry.delay(1, seed_of(&entry.launch.launch_id));
            wait(entry, Phase::LookupWait, env.now_ms + ms(delay))
        }
    }
}

/// Sends the next create, unless the launch cannot or may not be dialed.
/// This is the last hop: every create passes the pause, window and slot
/// checks here, on `control` as it is now, in the transaction that asks for
/// the create (the handler sends it only before `send_by_ms`).
fn dial(mut entry: Entry, env: &Env<'_>) -> Step {
    if let Some((reason, detail)) = refusal(&entry.launch, env) {
        return fail(entry, FailureKind::Launch, reason.into(), detail, env);
    }
    if let Some(reason) = entry.stopped.clone() {
        let detail = format!("{} after the launch was sent", reason.replace('_', " "));
        return finish(entry, held(reason, detail), env);
    }
    if let Some(outcome) = hold(&entry.launch, env) {
        return finish(entry, outcome, env);
    }
    if env.shadow {
        return finish(entry, Outcome::Shadow, env);
    }
    if !env.policy.retry.may_retry(entry.attempts) {
        let (reason, detail) = entry
            .last_error
            .clone()
            .unwrap_or_else(|| ("not_placed".into(), None));
        let detail = Some(gave_up(entry.attempts, &reason, detail.as_deref()));
        return fail(entry, FailureKind::Provider, reason, detail, env);
    }
    entry.seq += 1;
    entry.attempts += 1;
    entry.lookups = 0;
    entry.requested_at_ms.get_or_insert(env.now_ms);
    entry.phase = Phase::Dispatching { seq: entry.seq };
    let launch = &entry.launch;
    // Never sent after its slot or its window: the handler drops a create
    // whose deadline passed while it waited (for the rate limiter, or a
    // busy executor), and the next dial holds the launch.
    let send_by_ms = [launch.slot_ends_at_ms, last_send_in_window(launch)]
        .into_iter()
        .flatten()
        .fold(env.policy.send_by_ms(env.now_ms), i64::min);
    let effect = EffectCall::Create {
        seq: entry.seq,
        send_by_ms,
        call: CreateCall {
            launch_id: launch.launch_id,
            tenant_id: launch.tenant_id.clone(),
            contact_id: launch.contact_id.clone(),
            campaign_id: launch.campaign_id.clone(),
            to: launch.to.clone(),
            from: launch.from.clone(),
        },
    };
    Step {
        effect: Some(effect),
        timer: TimerChange::Set(env.policy.result_deadline_ms(env.now_ms)),
        ..Step::put(entry)
    }
}

/// Sends the next lookup, unless the reconciliation has run out of them.
fn start_lookup(mut entry: Entry, env: &Env<'_>) -> Step {
    if entry.lookups >= env.policy.max_lookups {
        let detail = Some(match &entry.last_error {
            Some((reason, detail)) => format!(
                "{} lookups failed; last: {reason} {}",
                entry.lookups,
                detail.as_deref().unwrap_or_default()
            ),
            None => format!("{} lookups answered nothing", entry.lookups),
        });
        return fail(
            entry,
            FailureKind::Unresolved,
            "reconcile_failed".into(),
            detail,
            env,
        );
    }
    entry.seq += 1;
    entry.lookups += 1;
    entry.phase = Phase::Reconciling { seq: entry.seq };
    let since = entry.requested_at_ms.unwrap_or(env.now_ms) - ms(env.policy.lookup_skew);
    let effect = EffectCall::Lookup {
        seq: entry.seq,
        send_by_ms: env.policy.send_by_ms(env.now_ms),
        find: FindCall {
            launch_id: entry.launch.launch_id,
            to: entry.launch.to.clone(),
            since_ms: since,
        },
    };
    Step {
        effect: Some(effect),
        timer: TimerChange::Set(env.policy.result_deadline_ms(env.now_ms)),
        ..Step::put(entry)
    }
}

fn finish(mut entry: Entry, outcome: Outcome, env: &Env<'_>) -> Step {
    entry.phase = Phase::Done {
        outcome: outcome.clone(),
    };
    Step {
        timer: TimerChange::Set(env.now_ms + ms(env.policy.ledger_retention)),
        ..Step::put(entry)
    }
    .notice(Notice::Final(outcome))
}

fn fail(
    entry: Entry,
    kind: FailureKind,
    reason: String,
    detail: Option<String>,
    env: &Env<'_>,
) -> Step {
    let failure = Failure {
        reason,
        detail,
        kind,
    };
    finish(entry, Outcome::Failed { failure }, env)
}

fn wait(mut entry: Entry, phase: Phase, due_ms: i64) -> Step {
    entry.phase = phase;
    Step {
        timer: TimerChange::Set(due_ms),
        ..Step::put(entry)
    }
}

/// The `ambiguous` notice, the first time a launch becomes ambiguous.
fn ambiguous(step: &mut Step, reason: &str, detail: Option<String>) -> Option<Notice> {
    let Store::Put(entry) = &mut step.store else {
        return None;
    };
    if entry.ambiguous_emitted || entry.is_done() {
        return None;
    }
    entry.ambiguous_emitted = true;
    Some(Notice::Ambiguous {
        reason: reason.to_owned(),
        detail,
    })
}

/// Why a launch cannot be dialed as asked, if it cannot.
fn refusal(launch: &Launch, env: &Env<'_>) -> Option<(&'static str, Option<String>)> {
    if let Some(provider) = launch.provider.as_deref() {
        if !provider.eq_ignore_ascii_case(env.provider) {
            return Some((
                "unknown_provider",
                Some(format!("no adapter for {provider:?}")),
            ));
        }
    }
    // The edges accept nothing else; this is the last hop's own check, the same rule.
    if !callstream_domain::input::is_e164(&launch.to) {
        return Some(("invalid_number", Some("to_number is not E.164".into())));
    }
    if launch.from.is_none() && !env.has_default_from {
        return Some(("no_caller_id", Some("no from_number and no default".into())));
    }
    None
}

/// Why the launch may not be dialed now although it may be later, if so:
/// a pause covers it, a state calling rule refuses it now (the rule is the
/// reason: `state_hours:FL`, `frequency_cap:FL:3_per_24h`), its calling
/// window has closed, or its slot has passed (a create after its slot would
/// break the grid's pace on the wire, as a burst of overdue launches after
/// downtime would).
fn hold(launch: &Launch, env: &Env<'_>) -> Option<Outcome> {
    if let Some(pause) = env.pause {
        let detail = format!("{} at the last hop", pause.replace('_', " "));
        return Some(held(pause.to_owned(), detail));
    }
    // The phone rings a moment after the create leaves: the rules must allow that too.
    let rings_by = env.now_ms.saturating_add(WINDOW_MARGIN_MS);
    let broken = launch.calling_rule_broken(
        &[env.now_ms, rings_by],
        &env.calling_rules.rules,
        &env.placed_calls_ms,
    );
    if let Some((violation, not_before_ms)) = broken {
        let detail = format!("{violation} (at the last hop)");
        return Some(Outcome::Held {
            reason: violation.rule_id.to_string(),
            detail,
            not_before_ms,
        });
    }
    if last_send_in_window(launch).is_some_and(|at| env.now_ms > at) {
        return Some(held(
            "window_closed".to_owned(),
            "the calling window closed".to_owned(),
        ));
    }
    if let Some(end) = launch.slot_ends_at_ms.filter(|end| env.now_ms > *end) {
        let late = env.now_ms - end;
        return Some(held(
            "slot_passed".to_owned(),
            format!("its slot ended {late} ms before the create could leave"),
        ));
    }
    None
}

/// A hold no rule gave: planned again from now.
fn held(reason: String, detail: String) -> Outcome {
    Outcome::Held {
        reason,
        detail,
        not_before_ms: None,
    }
}

/// How much of its calling window a create must leave: the provider places (and stamps) the
/// call after the create leaves, and the phone must not ring after the window closes.
pub const WINDOW_MARGIN_MS: i64 = 60_000;

/// The last moment a create may leave for `launch`'s window, if it has one.
fn last_send_in_window(launch: &Launch) -> Option<i64> {
    launch
        .expires_at_ms
        .map(|at| at.saturating_sub(WINDOW_MARGIN_MS))
}

fn gave_up(attempts: u32, reason: &str, detail: Option<&str>) -> String {
    match detail {
        Some(detail) => format!("gave up after {attempts} attempt(s); last: {reason}: {detail}"),
        None => format!("gave up after {attempts} attempt(s); last: {reason}"),
    }
}
