//! An operator's `ignore` is judged here unless it names a missing-completion case
//! (recovery's): the holding exception releases the hold, any other exception is closed
//! as ignored, each audited exactly once; a case's exceptions are left to recovery.

mod support;

use callstream_domain::ids::completion_case as case_ids;
use callstream_schemas::*;
use support::*;
use uuid::Uuid;

fn ignore(
    contact: &str,
    name: &str,
    exception: Option<Uuid>,
    launch: Option<Uuid>,
) -> ContactCommand {
    ContactCommand {
        exception_id: exception,
        launch_id: launch,
        reason: Some("handled by phone".into()),
        ..command(ContactCommandKind::Ignore, contact, name)
    }
}

#[test]
fn another_services_exception_is_closed_as_ignored_once() {
    let mut h = harness();
    h.enter("c1", CAMPAIGN);
    // A crm_failed or no_slot exception: the contact keeps no case for it.
    let exception = Uuid::from_u128(0xc3f);
    let cmd = ignore("c1", "ignore-crm", Some(exception), None);
    h.command(&cmd, t0() + minutes(1));
    h.command(&cmd, t0() + minutes(2));
    let closed = h.exceptions();
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert_eq!(
        (closed[0].exception_id, closed[0].status, &closed[0].actor),
        (
            exception,
            ExceptionStatus::Ignored,
            &Actor::operator("ops@acme")
        )
    );
    let audits: Vec<_> = h
        .audits()
        .into_iter()
        .filter(|a| a.command_id == Some(cmd.event_id))
        .collect();
    assert_eq!(audits.len(), 1, "the repeat is not audited again");
    assert_eq!(
        (audits[0].result, audits[0].reason.as_deref()),
        (AuditResult::Applied, Some("exception_ignored"))
    );
}

#[test]
fn the_holding_exception_named_with_its_launch_releases_the_hold_once() {
    let mut h = harness();
    let launch = h.launched("c1");
    let analysis = CallAnalysis {
        wants_person: true,
        ..CallAnalysis::default()
    };
    let call = answered(
        "c1",
        "CA1",
        Some(launch.launch_id),
        analysis,
        t0() + minutes(8),
    );
    h.call(&call);
    let opened = h.exceptions().pop().unwrap();
    assert_eq!(opened.launch_id, Some(launch.launch_id));
    // The API names the exception's launch, as its view has it.
    let cmd = ignore(
        "c1",
        "ignore-hold",
        Some(opened.exception_id),
        opened.launch_id,
    );
    h.command(&cmd, t0() + minutes(30));
    let closed = h.exceptions().pop().unwrap();
    assert_eq!(
        (closed.exception_id, closed.status),
        (opened.exception_id, ExceptionStatus::Ignored)
    );
    assert!(!h.state("c1").urgent_request_open);
    let audits: Vec<_> = h
        .audits()
        .into_iter()
        .filter(|a| a.command_id == Some(cmd.event_id))
        .map(|a| (a.result, a.reason))
        .collect();
    assert_eq!(
        audits,
        [(AuditResult::Applied, Some("hold_released".into()))]
    );
}

#[test]
fn a_missing_completion_case_is_left_to_recovery_and_a_bare_ignore_is_rejected() {
    let mut h = harness();
    h.enter("c1", CAMPAIGN);
    let launch = Uuid::from_u128(0x1a);
    let before = (h.exceptions().len(), h.audits().len());
    for (name, exception) in [
        ("missing", Some(case_ids::missing_exception(&launch))),
        ("failed", Some(case_ids::recovery_failed_exception(&launch))),
        ("launch-only", None),
    ] {
        h.command(
            &ignore("c1", name, exception, Some(launch)),
            t0() + minutes(1),
        );
    }
    assert_eq!((h.exceptions().len(), h.audits().len()), before);

    let bare = ignore("c1", "bare", None, None);
    h.command(&bare, t0() + minutes(2));
    let audit = h.audits().pop().unwrap();
    assert_eq!(
        (audit.command_id, audit.result, audit.reason.as_deref()),
        (
            Some(bare.event_id),
            AuditResult::Rejected,
            Some("no_exception")
        )
    );
}
