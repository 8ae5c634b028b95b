//! An operator's retry of a command that failed for good, on the in-memory
//! driver: the ledger keeps the failed command (across a restart), the retry
//! names its exception, closes it, and runs the command again, searching
//! first when it may have landed (until its settle window is over), so
//! nothing is written twice; a retry that
//! finds nothing to retry is audited as rejected and changes nothing.
#![allow(clippy::unwrap_used)]

mod support;

use callstream_crm_dispatcher::state::{LedgerEntry, Settled};
use callstream_crm_dispatcher::wire::Outcome;
use callstream_runtime::partitioner::partition_for_key;
use callstream_schemas::{
    ActorKind, AuditResult, ContactCommandKind, CrmAction, CrmResultStatus as Status,
    ExceptionStatus,
};
use support::driver::*;
use uuid::Uuid;

/// A kit whose commands fail for good after `failures` failed requests.
fn kit_failing_after(failures: u32) -> Kit {
    let mut config = config();
    config.policy.retry.max_failures = failures;
    Kit::with(config)
}

/// A contact on the partition (of 4) of `key`: the driver reads a store
/// entry from its own key's partition, and the ledger lives on the contact's.
fn contact_beside(key: &str) -> String {
    let want = partition_for_key(key.as_bytes(), 4);
    (0..)
        .map(|i| format!("c{i}"))
        .find(|c| partition_for_key(c.as_bytes(), 4) == want)
        .unwrap()
}

fn ledger(kit: &Kit, n: u128) -> LedgerEntry {
    let raw = kit
        .driver
        .get("ledger", op(n).to_string().as_bytes())
        .unwrap();
    serde_json::from_slice(raw).unwrap()
}

/// Fails command `n` of `contact` with 503s until the bound; its exception id.
fn fail_with_503s(kit: &mut Kit, n: u128, contact: &str, action: CrmAction, failures: u32) -> Uuid {
    kit.pipe(&command(n, contact, action));
    kit.answer(contact, refused(503, None));
    for _ in 1..failures {
        kit.advance_s(60);
        kit.answer(contact, refused(503, None));
    }
    assert_eq!(kit.statuses().last(), Some(&(op(n), Status::Failed)));
    let opened = kit.exceptions().last().cloned().unwrap();
    assert_eq!(opened.status, ExceptionStatus::Open);
    opened.exception_id
}

#[test]
fn a_failed_command_is_kept_and_an_operator_retry_applies_it_once() {
    let mut kit = kit_failing_after(3);
    let contact = contact_beside(&op(1).to_string());
    let exception = fail_with_503s(&mut kit, 1, &contact, CrmAction::CreateTask, 3);
    let kept = ledger(&kit, 1);
    assert_eq!(kept.settled, Settled::Failed);
    assert_eq!(
        kept.kept.as_ref().map(|k| &k.command),
        Some(&command(1, &contact, CrmAction::CreateTask)),
        "the payload is kept"
    );
    assert_eq!(kept.open_exception, Some(exception));
    assert_eq!(kit.driver.open_timers(), 0, "nothing waits by itself");

    // A crash: the kept command comes back from the changelog.
    kit.driver.restart();
    let retry = retry_request(1, &contact, exception);
    kit.pipe_retry(&retry);
    let audit = &kit.audits()[0];
    assert_eq!(
        (audit.result, audit.reason.as_deref(), audit.command_id),
        (AuditResult::Applied, Some("retried"), Some(retry.event_id))
    );
    assert_eq!(audit.actor.id, "ana");
    let closed = kit.exceptions().last().cloned().unwrap();
    assert_eq!(
        (closed.exception_id, closed.status),
        (exception, ExceptionStatus::Resolved)
    );
    assert_eq!(
        (closed.actor.kind, closed.causation_id),
        (ActorKind::Operator, Some(retry.event_id))
    );

    // The 503s may have applied the create: the retry searches first.
    assert!(is_search(&kit.answer(&contact, Outcome::NotFound)));
    // Nothing found inside the 503ed create's settle window is not trusted.
    kit.search_out_the_window(&contact);
    assert!(is_create(&kit.answer(&contact, written("41"))));
    assert!(kit.pending().is_empty(), "one create, no second one");
    assert_eq!(
        kit.statuses(),
        [(op(1), Status::Failed), (op(1), Status::Applied)]
    );
    let after = ledger(&kit, 1);
    assert_eq!(after.settled, Settled::Applied);
    assert_eq!((after.kept, after.open_exception), (None, None));

    // A second retry of the same exception finds nothing to retry.
    kit.pipe_retry(&retry_request(2, &contact, exception));
    assert!(kit.pending().is_empty());
    let refused = &kit.audits()[1];
    assert_eq!(
        (refused.result, refused.reason.as_deref()),
        (AuditResult::Rejected, Some("no_failed_crm_command"))
    );
    assert_eq!(kit.statuses().len(), 2);
    assert_eq!(kit.exceptions().len(), 2, "opened once, closed once");
}

#[test]
fn a_retry_of_a_create_that_landed_finds_it_and_writes_nothing() {
    let mut kit = kit_failing_after(2);
    kit.pipe(&command(1, "c", CrmAction::AddNote));
    // Applied, then the answer timed out; then the search is refused.
    assert!(is_create(&kit.answer("c", unanswered())));
    kit.advance_s(60);
    assert!(is_search(&kit.answer("c", refused(503, None))));
    let exception = kit.exceptions()[0].exception_id;
    kit.pipe_retry(&retry_request(1, "c", exception));
    let asked = kit.answer(
        "c",
        Outcome::Found {
            object_id: "n7".into(),
        },
    );
    assert!(is_search(&asked));
    assert!(kit.pending().is_empty());
    let last = kit.results().last().cloned().unwrap();
    assert_eq!(
        (last.status, last.crm_object_id.as_deref()),
        (Status::AlreadyApplied, Some("n7"))
    );
}

#[test]
fn a_retried_command_waits_behind_its_contact_and_holds_no_one_else() {
    let mut kit = kit_failing_after(1);
    let exception = fail_with_503s(&mut kit, 1, "c", CrmAction::AddNote, 1);
    kit.pipe(&command(2, "c", CrmAction::AddNote));
    kit.pipe_retry(&retry_request(1, "c", exception));
    kit.pipe(&command(3, "d", CrmAction::AddNote));
    assert_eq!(
        kit.pending().len(),
        2,
        "c's command 2 and d's, not the retry"
    );
    kit.answer("d", written("d3"));
    kit.answer("c", written("c2"));
    assert!(is_search(&kit.answer("c", Outcome::NotFound)));
    kit.search_out_the_window("c");
    kit.answer("c", written("c1"));
    assert_eq!(
        kit.statuses(),
        [
            (op(1), Status::Failed),
            (op(3), Status::Applied),
            (op(2), Status::Applied),
            (op(1), Status::Applied)
        ]
    );
}

#[test]
fn failing_again_opens_a_new_exception_and_a_replay_closes_the_open_one() {
    let mut kit = kit_failing_after(1);
    let first = fail_with_503s(&mut kit, 1, "c", CrmAction::AddNote, 1);
    kit.pipe_retry(&retry_request(1, "c", first));
    kit.answer("c", refused(503, None));
    let exceptions = kit.exceptions();
    let statuses: Vec<_> = exceptions
        .iter()
        .map(|e| (e.exception_id == first, e.status))
        .collect();
    assert_eq!(
        statuses,
        [
            (true, ExceptionStatus::Open),
            (true, ExceptionStatus::Resolved),
            (false, ExceptionStatus::Open)
        ]
    );
    let second = exceptions[2].exception_id;

    // The original command comes again (a replay, not a retry): it runs,
    // and its open exception closes with it.
    kit.pipe(&command(1, "c", CrmAction::AddNote));
    assert!(is_search(&kit.answer("c", Outcome::NotFound)));
    kit.search_out_the_window("c");
    kit.answer("c", written("n1"));
    let closed = kit.exceptions().last().cloned().unwrap();
    assert_eq!(
        (closed.exception_id, closed.status, closed.reason.as_str()),
        (second, ExceptionStatus::Resolved, "settled")
    );
    assert_eq!(closed.actor.kind, ActorKind::System);
    kit.pipe_retry(&retry_request(2, "c", second));
    assert_eq!(kit.audits()[1].result, AuditResult::Rejected);
    assert!(kit.pending().is_empty());
}

#[test]
fn retries_naming_nothing_retryable_are_rejected_and_change_nothing() {
    let mut kit = kit_failing_after(1);
    let exception = fail_with_503s(&mut kit, 1, "c", CrmAction::AddNote, 1);
    let unknown = retry_request(1, "c", Uuid::from_u128(99));
    let mut other_tenant = retry_request(2, "c", exception);
    other_tenant.tenant_id = "t2".into();
    let other_contact = retry_request(3, "d", exception);
    let mut not_a_retry = retry_request(4, "c", exception);
    not_a_retry.kind = ContactCommandKind::RetryLater;
    for request in [&unknown, &other_tenant, &other_contact, &not_a_retry] {
        kit.pipe_retry(request);
    }
    assert!(kit.pending().is_empty());
    let reasons: Vec<_> = kit
        .audits()
        .iter()
        .map(|a| (a.result, a.reason.clone().unwrap_or_default()))
        .collect();
    let rejected = |r: &str| (AuditResult::Rejected, r.to_owned());
    assert_eq!(
        reasons,
        [
            rejected("no_failed_crm_command"),
            rejected("no_failed_crm_command"),
            rejected("no_failed_crm_command"),
            rejected("not_a_crm_retry")
        ]
    );
    assert_eq!(kit.exceptions().len(), 1, "still open");
    // The exception can still be retried.
    kit.pipe_retry(&retry_request(5, "c", exception));
    assert!(is_search(&kit.answer("c", Outcome::NotFound)));
    kit.search_out_the_window("c");
    kit.answer("c", written("n1"));
    assert_eq!(kit.statuses().last(), Some(&(op(1), Status::Applied)));
}
