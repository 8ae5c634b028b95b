//! Which ignores recovery judges: those of a missing-completion case's own exceptions (or
//! of its launch alone), applied when the case is open and rejected when it is not, each
//! audited once. An ignore of any other exception, even one naming a launch with a case
//! (the contact's hold, say), is the contact processor's: recovery writes nothing for it.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed assertion

mod support;

use callstream_domain::ids::completion_case as case_ids;
use callstream_e2e::fixtures;
use callstream_platform::topics;
use callstream_recovery::Recovery;
use callstream_runtime::{Input, TestDriver};
use callstream_schemas::{
    Actor, AuditResult, ContactCommand, ContactCommandKind, Event, ExceptionEvent, ExceptionStatus,
};
use support::*;
use uuid::Uuid;

fn ignore(d: &mut TestDriver<Recovery>, id: u128, n: u128, exception: Uuid) -> Uuid {
    let at = chrono::DateTime::from_timestamp_millis(T0).unwrap();
    let actor = Actor::operator("ops@example.com");
    let cmd = ContactCommand {
        event_id: Uuid::from_u128(id),
        launch_id: Some(launch(n)),
        exception_id: Some(exception),
        ..fixtures::contact_command(TENANT, CONTACT, ContactCommandKind::Ignore, actor, at)
    };
    d.pipe(Input::new(
        name(topics::CONTACT_COMMANDS),
        CONTACT,
        cmd.encode().unwrap(),
    ));
    cmd.event_id
}

fn audits_of(d: &TestDriver<Recovery>, command: Uuid) -> Vec<(String, AuditResult)> {
    d.outputs::<callstream_schemas::AuditEvent>(&name(topics::AUDIT))
        .into_iter()
        .filter(|a| a.command_id == Some(command))
        .map(|a| (a.action, a.result))
        .collect()
}

#[test]
fn another_exception_naming_a_cases_launch_is_left_to_the_contact_processor() {
    let mut d = driver();
    missing(&mut d, 1);
    let before = d.outputs::<ExceptionEvent>(&name(topics::EXCEPTIONS)).len();
    // The contact's hold, opened by the same call, carries the launch id too.
    let hold = Uuid::from_u128(0x401d);
    let command = ignore(&mut d, 600, 1, hold);
    assert!(audits_of(&d, command).is_empty());
    assert_eq!(
        d.outputs::<ExceptionEvent>(&name(topics::EXCEPTIONS)).len(),
        before
    );
    // The case is still open: its own exception's ignore is applied, once.
    let own = ignore(&mut d, 601, 1, case_ids::missing_exception(&launch(1)));
    ignore(&mut d, 601, 1, case_ids::missing_exception(&launch(1)));
    assert_eq!(
        audits_of(&d, own),
        [("recovery.ignored".to_string(), AuditResult::Applied)]
    );
    let last = d
        .outputs::<ExceptionEvent>(&name(topics::EXCEPTIONS))
        .pop()
        .unwrap();
    assert_eq!(last.status, ExceptionStatus::Ignored);
}

#[test]
fn an_ignore_of_a_closed_cases_exception_is_rejected_once() {
    let mut d = driver();
    missing(&mut d, 2);
    command(&mut d, 700, ContactCommandKind::AdvanceNoAnswer, Some(2));
    let late = ignore(&mut d, 701, 2, case_ids::missing_exception(&launch(2)));
    assert_eq!(
        audits_of(&d, late),
        [("recovery.ignored".to_string(), AuditResult::Rejected)]
    );
}
