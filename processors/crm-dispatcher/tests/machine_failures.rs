//! The dispatcher's failures and switches on the in-memory driver: `429`
//! with `Retry-After`, the retry bound and the exception it opens, the CRM
//! refusing outright, the write switch and shadow mode from `control`, and
//! a property test over random outcomes: never a blind second create, one
//! request per contact, every command settled once.
#![allow(clippy::unwrap_used)]

mod support;

use callstream_crm_dispatcher::wire::{CrmRequest, Outcome};
use callstream_crm_dispatcher::CrmDispatcherConfig;
use callstream_runtime::partitioner::partition_for_key;
use callstream_schemas::{
    ControlSetting, CrmAction, CrmCommand, CrmResultStatus as Status, Event, ExceptionType,
};
use proptest::prelude::*;
use support::driver::*;

#[test]
fn a_429_waits_at_least_its_retry_after_and_then_writes_again() {
    let mut kit = Kit::new();
    kit.pipe(&command(1, "c", CrmAction::AddNote));
    let first = kit.answer("c", refused(429, Some(8_000)));
    kit.advance_s(7);
    assert!(kit.pending().is_empty(), "not before Retry-After");
    kit.advance_s(1);
    let again = kit.answer("c", written("1"));
    assert_eq!(
        first, again,
        "a 429 applied nothing: the same create, no search"
    );
    assert_eq!(kit.results()[0].attempts, 2);
}

#[test]
fn at_the_bound_a_command_fails_with_an_exception_and_its_contact_goes_on() {
    let mut config = config();
    config.policy.retry.max_failures = 3;
    let mut kit = Kit::with(config);
    kit.pipe(&command(1, "c", CrmAction::CreateTask));
    kit.pipe(&command(2, "c", CrmAction::AddNote));
    kit.answer("c", refused(502, None));
    for _ in 0..2 {
        kit.advance_s(60);
        kit.answer("c", refused(503, None));
    }
    let results = kit.results();
    assert_eq!(results.len(), 1);
    let failed = &results[0];
    assert_eq!(failed.status, Status::Failed);
    assert_eq!((failed.attempts, failed.http_status), (3, Some(503)));
    assert!(failed.error.as_deref().unwrap_or_default().contains("503"));
    let exceptions = kit.exceptions();
    assert_eq!(exceptions.len(), 1);
    let exception = &exceptions[0];
    assert_eq!(exception.exception_type, ExceptionType::CrmFailed);
    assert_eq!(exception.contact_id, "c");
    assert_eq!(exception.operation_id, Some(op(1)));
    assert_eq!(exception.reason, "crm_retries_exhausted");
    let detail = exception.detail.as_deref().unwrap_or_default();
    assert!(
        detail.starts_with("create_task failed") && detail.contains("503"),
        "{detail}"
    );
    // The next command of the contact is not held behind the failed one.
    assert!(is_create(&kit.answer("c", written("2"))));
    // An operator's retry of the failed create searches first: it may have
    // landed. Inside the first create's settle window, nothing found is not
    // trusted either: it searches until the window is over.
    kit.pipe(&command(1, "c", CrmAction::CreateTask));
    assert!(is_search(&kit.answer("c", Outcome::NotFound)));
    let (_, waited) = kit.search_out_the_window("c");
    assert!(120 + waited >= kit.config.policy.settle_window.as_secs() as i64);
    assert!(is_create(&kit.answer("c", written("1"))));
    assert_eq!(kit.statuses().last(), Some(&(op(1), Status::Applied)));
}

#[test]
fn the_crm_refusing_fails_at_once() {
    let cases = [
        (
            command(1, "c", CrmAction::AddNote),
            refused(400, None),
            "crm_rejected",
        ),
        (
            update(1, "c", START, &[("a", "1")]),
            refused(404, None),
            "crm_rejected",
        ),
    ];
    for (cmd, outcome, reason) in cases {
        let mut kit = Kit::new();
        kit.pipe(&cmd);
        kit.answer("c", outcome);
        assert_eq!(kit.statuses(), [(op(1), Status::Failed)]);
        assert_eq!(kit.exceptions()[0].reason, reason);
        assert_eq!(kit.driver.open_timers(), 0);
    }
}

#[test]
fn an_unknown_action_fails_with_an_exception_and_sends_nothing() {
    let mut kit = Kit::new();
    kit.pipe(&command(1, "c", CrmAction::Unknown));
    assert!(kit.pending().is_empty());
    assert_eq!(kit.statuses(), [(op(1), Status::Failed)]);
    assert_eq!(kit.exceptions()[0].reason, "crm_unsupported_action");
}

/// A contact whose partition (of 4) is that of `key`: the driver looks a
/// store entry up by its own key's partition, and the op-keyed stores live
/// on the contact's.
fn contact_beside(key: &str) -> String {
    let want = partition_for_key(key.as_bytes(), 4);
    (0..)
        .map(|i| format!("c{i}"))
        .find(|c| partition_for_key(c.as_bytes(), 4) == want)
        .unwrap()
}

#[test]
fn writes_off_suppresses_and_keeps_the_command_and_on_applies_from_the_next_command() {
    let mut kit = Kit::new();
    let key = op(1).to_string();
    let contact = contact_beside(&key);
    kit.switch(ControlSetting::CrmWrites, Some(false));
    let suppressed = command(1, &contact, CrmAction::AddNote);
    kit.pipe(&suppressed);
    kit.pipe(&update(2, "d", START, &[("a", "1")]));
    assert!(
        kit.pending().is_empty(),
        "nothing sent while writes are off"
    );
    assert_eq!(
        kit.statuses(),
        [(op(1), Status::Suppressed), (op(2), Status::Suppressed)]
    );
    let kept = kit.driver.get("suppressed", key.as_bytes()).unwrap();
    assert_eq!(
        CrmCommand::decode(kept).unwrap(),
        suppressed,
        "replayable as is"
    );
    // Switched on: the next command goes, without a restart.
    kit.switch(ControlSetting::CrmWrites, Some(true));
    kit.pipe(&command(3, &contact, CrmAction::AddNote));
    kit.answer(&contact, written("3"));
    // The replayed command is carried out, and leaves the suppressed store.
    kit.pipe(&suppressed);
    kit.answer(&contact, written("1"));
    assert_eq!(
        kit.statuses()[2..],
        [(op(3), Status::Applied), (op(1), Status::Applied)]
    );
    assert!(kit.driver.get("suppressed", key.as_bytes()).is_none());
}

#[test]
fn writes_switched_off_while_a_command_is_parked_suppress_its_retry() {
    let mut kit = Kit::new();
    kit.pipe(&command(1, "c", CrmAction::AddNote));
    kit.answer("c", refused(429, Some(1_000)));
    kit.switch(ControlSetting::CrmWrites, Some(false));
    kit.advance_s(60);
    assert!(kit.pending().is_empty());
    assert_eq!(kit.statuses(), [(op(1), Status::Suppressed)]);
}

#[test]
fn shadow_mode_logs_instead_of_sending() {
    let mut kit = Kit::new();
    kit.switch(ControlSetting::ShadowMode, Some(true));
    kit.pipe(&command(1, "c", CrmAction::LogCall));
    assert!(kit.pending().is_empty());
    assert_eq!(kit.statuses(), [(op(1), Status::Shadow)]);
    kit.switch(ControlSetting::ShadowMode, None);
    kit.pipe(&command(2, "c", CrmAction::LogCall));
    let CrmRequest::Create { object_type, .. } = kit.answer("c", written("2")) else {
        panic!()
    };
    assert_eq!(object_type, "calls");
}

#[test]
fn an_unreadable_switch_reads_as_writes_off() {
    let mut kit = Kit::new();
    let topic = kit.config.topics.name("control");
    kit.driver.set_global(
        &topic,
        format!("{TENANT}/crm_writes"),
        Some(b"garbage".to_vec()),
    );
    kit.pipe(&command(1, "c", CrmAction::AddNote));
    assert!(kit.pending().is_empty());
    assert_eq!(kit.statuses(), [(op(1), Status::Suppressed)]);
}

/// An outcome a property test can pick.
fn any_outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(written("x")),
        1 => Just(Outcome::Found { object_id: "x".into() }),
        1 => Just(Outcome::NotFound),
        1 => Just(refused(429, Some(500))),
        1 => Just(refused(503, None)),
        1 => Just(unanswered()),
        1 => Just(Outcome::Expired),
        1 => Just(Outcome::Unreachable { message: "refused".into() }),
    ]
}

fn quick_config() -> CrmDispatcherConfig {
    let mut config = config();
    config.policy.retry.max_failures = 4;
    config
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the CRM answers, and whatever results a crash loses: at most
    /// one request per contact is out, a create whose outcome is unknown is
    /// searched for before it is sent again, and every command settles once.
    #[test]
    fn random_outcomes_keep_the_guarantees(
        commands in proptest::collection::vec((0usize..3, 0usize..3), 1..12),
        outcomes in proptest::collection::vec((any_outcome(), any::<bool>()), 0..80),
    ) {
        let mut kit = Kit::with(quick_config());
        let contacts = ["a", "b", "c"];
        let actions = [CrmAction::AddNote, CrmAction::CreateTask, CrmAction::UpdateContact];
        for (n, (contact, action)) in commands.iter().enumerate() {
            let mut cmd = command(n as u128, contacts[*contact], actions[*action]);
            cmd.properties.insert("p".into(), n.to_string());
            cmd.fact_at = chrono::DateTime::from_timestamp_millis(START + n as i64).unwrap();
            kit.pipe(&cmd);
        }
        // Per op id: a create was sent and may have applied, unresolved.
        let mut unresolved = std::collections::HashSet::new();
        let mut outcomes = outcomes.into_iter();
        for _ in 0..2_000 {
            let pending = kit.pending();
            if pending.is_empty() {
                if kit.driver.open_timers() == 0 {
                    break;
                }
                kit.advance_s(60);
                continue;
            }
            let mut per_contact = std::collections::HashMap::new();
            for (request, _) in &pending {
                *per_contact.entry(request.key.clone()).or_insert(0) += 1;
            }
            prop_assert!(per_contact.values().all(|&n| n == 1), "{per_contact:?}");
            let (request, call) = pending[0].clone();
            let op = request.id.split('/').next().unwrap_or_default().to_owned();
            if let CrmRequest::Create { .. } = call.request {
                prop_assert!(!unresolved.contains(&op), "create of {op} sent again blindly");
            }
            let (outcome, lose) = outcomes.next().unwrap_or((written("x"), false));
            let outcome = match (&call.request, outcome) {
                // Searches answer searches, writes answer writes.
                (CrmRequest::Search { .. }, Outcome::Written { .. }) => Outcome::NotFound,
                (CrmRequest::Search { .. }, o) => o,
                (_, Outcome::Found { .. } | Outcome::NotFound) => written("x"),
                (_, o) => o,
            };
            if lose {
                // A crash: every request out is lost, and may have landed.
                for (lost, call) in &pending {
                    if matches!(call.request, CrmRequest::Create { .. }) {
                        unresolved.insert(lost.id.split('/').next().unwrap_or_default().to_owned());
                    }
                }
                kit.driver.take_effects();
                kit.driver.restart();
                continue;
            }
            match (&call.request, &outcome) {
                (CrmRequest::Create { .. }, Outcome::Unanswered { .. })
                | (CrmRequest::Create { .. }, Outcome::Refused { status: 503, .. }) => {
                    unresolved.insert(op);
                }
                (CrmRequest::Search { .. }, Outcome::NotFound | Outcome::Found { .. }) => {
                    unresolved.remove(&op);
                }
                _ => {}
            }
            kit.driver.complete_effect(request, outcome.encode());
        }
        let mut settled: Vec<_> = kit.statuses().iter().map(|(op, _)| *op).collect();
        settled.sort();
        let mut expected: Vec<_> = (0..commands.len()).map(|n| op(n as u128)).collect();
        expected.sort();
        prop_assert_eq!(settled, expected, "every command settles exactly once");
        let failed = kit.statuses().iter().filter(|(_, s)| *s == Status::Failed).count();
        prop_assert_eq!(failed, kit.exceptions().len(), "every failure has its exception");
    }
}

/// Every permanent failure the registry (`callstream_domain::failures`) gives the CRM
/// dispatcher opens its exception.
#[test]
fn every_permanent_failure_of_the_crm_dispatcher_opens_an_exception() {
    use callstream_domain::failures::{Owner, PermanentFailure};
    use callstream_e2e::failures::{assert_opened, no_scenario};
    for failure in PermanentFailure::of(Owner::CrmDispatcher) {
        match failure {
            PermanentFailure::CrmWriteFailed => {
                let mut config = config();
                config.policy.retry.max_failures = 2;
                let mut kit = Kit::with(config);
                kit.pipe(&command(1, "c", CrmAction::CreateTask));
                kit.answer("c", refused(502, None));
                kit.advance_s(60);
                kit.answer("c", refused(503, None));
                assert_opened(failure, &kit.exceptions());
            }
            other => no_scenario("the CRM dispatcher", other),
        }
    }
}
