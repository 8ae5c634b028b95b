//! The dispatcher's state machine on the in-memory driver: the happy path
//! and the ledger, order per contact, parked retries that hold only their
//! own contact, reconciliation of unknown outcomes and lost results, and
//! the stale-update rule.

mod support;

use callstream_crm_dispatcher::wire::{CrmRequest, Outcome};
use callstream_crm_dispatcher::OP_ID_PROPERTY;
use callstream_schemas::{CrmAction, CrmResultStatus as Status};
use support::driver::*;

#[test]
fn a_note_is_created_with_its_operation_id_and_settles_applied() {
    let mut kit = Kit::new();
    let cmd = command(1, "c1", CrmAction::AddNote);
    kit.pipe(&cmd);
    let request = kit.answer("c1", written("901"));
    let CrmRequest::Create {
        object_type,
        properties,
        contact_id,
        ..
    } = request
    else {
        panic!("{request:?}")
    };
    assert_eq!((object_type.as_str(), contact_id.as_str()), ("notes", "c1"));
    assert_eq!(properties[OP_ID_PROPERTY], op(1).to_string());
    let results = kit.results();
    assert_eq!(results.len(), 1);
    let result = &results[0];
    assert_eq!(result.status, Status::Applied);
    assert_eq!(result.crm_object_id.as_deref(), Some("901"));
    assert_eq!(result.crm_object_type.as_deref(), Some("notes"));
    assert_eq!((result.attempts, result.http_status), (1, Some(201)));
    assert_eq!(result.causation_id, Some(cmd.event_id));
    assert_eq!(kit.driver.open_timers(), 0, "nothing left waiting");
    assert!(
        kit.driver.get("contacts", b"c1").is_none(),
        "idle contact forgotten"
    );
}

#[test]
fn the_ledger_answers_a_repeated_command_without_asking_the_crm() {
    let mut kit = Kit::new();
    let cmd = command(1, "c1", CrmAction::CreateTask);
    kit.pipe(&cmd);
    kit.answer("c1", written("77"));
    kit.driver.restart();
    kit.pipe(&cmd);
    assert!(kit.driver.pending_effects().is_empty());
    let results = kit.results();
    assert_eq!(results[1].status, Status::AlreadyApplied);
    assert_eq!(results[1].crm_object_id.as_deref(), Some("77"));
    assert_ne!(results[0].event_id, results[1].event_id);
}

#[test]
fn commands_of_one_contact_go_one_at_a_time_in_order_and_others_go_alongside() {
    let mut kit = Kit::new();
    for (n, contact) in [(1, "a"), (2, "a"), (3, "b"), (4, "a")] {
        kit.pipe(&command(n, contact, CrmAction::AddNote));
    }
    assert_eq!(kit.pending().len(), 2, "one in flight per contact");
    kit.answer("b", written("b3"));
    for (n, id) in [(1, "a1"), (2, "a2"), (4, "a4")] {
        let CrmRequest::Create { properties, .. } = kit.answer("a", written(id)) else {
            panic!()
        };
        assert_eq!(properties[OP_ID_PROPERTY], op(n).to_string());
    }
    let order: Vec<_> = kit.statuses().iter().map(|(o, _)| *o).collect();
    assert_eq!(order, [op(3), op(1), op(2), op(4)]);
}

#[test]
fn a_parked_command_holds_only_its_own_contact() {
    let mut kit = Kit::new();
    kit.pipe(&command(1, "a", CrmAction::AddNote));
    kit.pipe(&command(2, "a", CrmAction::AddNote));
    kit.answer("a", refused(503, None));
    assert!(kit.pending().is_empty(), "a is parked, not retried at once");
    // A 5xx on a create may have applied it: the retry is a search first.
    kit.advance_s(30);
    let search = kit.answer("a", Outcome::NotFound);
    assert!(is_search(&search), "{search:?}");
    // Nothing found 30 s after: the CRM's index may lag that long and more,
    // so a waits out its settle window, searching, while b goes on.
    for n in 10..15 {
        kit.pipe(&command(n, "b", CrmAction::AddNote));
        kit.answer("b", written(&format!("b{n}")));
    }
    assert_eq!(kit.results().len(), 5, "b went on while a waited");
    let (searches, waited) = kit.search_out_the_window("a");
    let window = kit.config.policy.settle_window.as_secs() as i64;
    assert!(
        30 + waited >= window,
        "a was created again {} s after its first create, inside its {window} s window",
        30 + waited
    );
    let create = kit.answer("a", written("a1"));
    assert!(is_create(&create));
    kit.answer("a", written("a2"));
    let tail: Vec<_> = kit.statuses()[5..].to_vec();
    assert_eq!(tail, [(op(1), Status::Applied), (op(2), Status::Applied)]);
    assert_eq!(
        kit.results()[5].attempts,
        searches + 3,
        "create, the searches, create"
    );
}

#[test]
fn a_create_with_an_unknown_outcome_is_searched_for_and_never_sent_twice() {
    let mut kit = Kit::new();
    kit.pipe(&command(1, "c", CrmAction::CreateTask));
    kit.answer("c", unanswered());
    // The search waits the settle time (the CRM's index lags its writes).
    kit.advance_s(4);
    assert!(kit.pending().is_empty());
    kit.advance_s(2);
    let search = kit.answer(
        "c",
        Outcome::Found {
            object_id: "55".into(),
        },
    );
    let CrmRequest::Search { object_type, op_id } = search else {
        panic!("{search:?}")
    };
    assert_eq!((object_type.as_str(), op_id), ("tasks", op(1).to_string()));
    let result = &kit.results()[0];
    assert_eq!(result.status, Status::AlreadyApplied);
    assert_eq!(result.crm_object_id.as_deref(), Some("55"));
    assert_eq!(result.attempts, 2);
}

#[test]
fn a_result_lost_in_a_crash_is_reconciled_by_the_timer_after_restart() {
    let mut kit = Kit::new();
    kit.pipe(&command(1, "c", CrmAction::AddNote));
    kit.pipe(&command(2, "c", CrmAction::AddNote));
    // The process dies with the request out: its result never comes.
    assert_eq!(kit.driver.take_effects().len(), 1);
    kit.driver.restart();
    // Not before the request must be over (send window + timeout + settle).
    kit.advance_s(44);
    assert!(kit.pending().is_empty());
    kit.advance_s(2);
    let search = kit.answer(
        "c",
        Outcome::Found {
            object_id: "9".into(),
        },
    );
    assert!(is_search(&search));
    let next = kit.answer("c", written("10"));
    assert!(is_create(&next), "the queued command survived the crash");
    assert_eq!(
        kit.statuses(),
        [(op(1), Status::AlreadyApplied), (op(2), Status::Applied)]
    );
}

#[test]
fn a_late_result_of_an_earlier_step_is_ignored() {
    let mut kit = Kit::new();
    kit.pipe(&command(1, "c", CrmAction::AddNote));
    let (first, _) = kit.pending_for("c");
    kit.driver.take_effects();
    kit.advance_s(46);
    let (search, _) = kit.pending_for("c");
    // The first write's result turns up after reconciliation began.
    kit.driver.complete_effect(first, written("1").encode());
    assert!(kit.results().is_empty(), "the stale result settles nothing");
    kit.driver.complete_effect(
        search,
        Outcome::Found {
            object_id: "1".into(),
        }
        .encode(),
    );
    assert_eq!(kit.statuses(), [(op(1), Status::AlreadyApplied)]);
}

#[test]
fn an_expired_request_is_asked_again_and_counts_for_nothing() {
    let mut kit = Kit::new();
    kit.pipe(&command(1, "c", CrmAction::AddNote));
    let first = kit.answer("c", Outcome::Expired);
    let again = kit.answer("c", written("3"));
    assert_eq!(first, again, "the same create, not a search");
    assert_eq!(kit.results()[0].attempts, 1);
}

#[test]
fn a_stale_contact_update_is_skipped_and_a_partly_stale_one_sends_only_the_fresh() {
    let mut kit = Kit::new();
    let t = START;
    kit.pipe(&update(
        1,
        "c",
        t + 200,
        &[("outcome", "answered"), ("last_call", "x")],
    ));
    kit.answer("c", written("c"));
    // Older facts for both properties: nothing to write.
    kit.pipe(&update(
        2,
        "c",
        t + 100,
        &[("outcome", "no_answer"), ("last_call", "y")],
    ));
    assert!(kit.pending().is_empty(), "nothing sent for a stale update");
    // One old, one new property: only the new one goes.
    kit.pipe(&update(
        3,
        "c",
        t + 150,
        &[("outcome", "busy"), ("owner", "o1")],
    ));
    let CrmRequest::Update {
        object_id,
        properties,
        ..
    } = kit.answer("c", written("c"))
    else {
        panic!()
    };
    assert_eq!(object_id, "c");
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["owner"]);
    assert_eq!(
        kit.statuses(),
        [
            (op(1), Status::Applied),
            (op(2), Status::SkippedStale),
            (op(3), Status::Applied)
        ]
    );
}

#[test]
fn an_update_whose_outcome_is_unknown_is_sent_again_not_searched() {
    let mut kit = Kit::new();
    kit.pipe(&update(1, "c", START, &[("outcome", "answered")]));
    let first = kit.answer("c", unanswered());
    kit.advance_s(5);
    let again = kit.answer("c", written("c"));
    assert_eq!(first, again);
    assert_eq!(kit.statuses(), [(op(1), Status::Applied)]);
}

#[test]
fn a_contact_has_one_timer_while_its_command_is_out_and_none_after() {
    let mut kit = Kit::new();
    kit.pipe(&command(1, "c", CrmAction::AddNote));
    kit.pipe(&command(2, "c", CrmAction::AddNote));
    assert_eq!(kit.driver.open_timers(), 1);
    kit.answer("c", refused(503, None));
    assert_eq!(kit.driver.open_timers(), 1, "the retry wait replaced it");
    kit.advance_s(30);
    kit.answer("c", Outcome::NotFound);
    assert_eq!(kit.driver.open_timers(), 1, "the next search's");
    kit.search_out_the_window("c");
    kit.answer("c", written("1"));
    assert_eq!(kit.driver.open_timers(), 1, "the next command's");
    kit.answer("c", written("2"));
    assert_eq!(kit.driver.open_timers(), 0);
}
