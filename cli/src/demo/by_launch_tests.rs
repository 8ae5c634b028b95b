//! Dropped completions are judged one launch at a time, and CRM objects are
//! counted per contact and launch, not per operation id.

use serde_json::json;
use uuid::Uuid;

use super::*;

fn call(sid: &str, launch: Uuid, dropped: bool, lost: bool) -> SimCall {
    SimCall {
        sid: sid.into(),
        launch_id: Some(launch),
        contact_id: Some("c-1".into()),
        completion_dropped: dropped,
        lost,
        accepted_event_ids: Vec::new(),
    }
}

#[test]
fn the_simulators_call_list_reads_with_its_launch_ids() {
    let launch = Uuid::new_v4();
    let body = json!({"calls": [
        {"sid": "CA1", "launch_id": launch.to_string(), "contact_id": "c-1",
         "completion_dropped": true, "lost": false},
        {"sid": "CA2", "launch_id": null, "completion_dropped": false, "lost": false},
        {"no_sid": true},
    ]});
    let calls = sim_calls(&body);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0], call("CA1", launch, true, false));
    assert_eq!(calls[1].launch_id, None);
    assert!(sim_calls(&json!({})).is_empty());
}

#[test]
fn each_dropped_completion_must_close_the_way_its_call_allows() {
    let ids: Vec<Uuid> = (0..6).map(|_| Uuid::new_v4()).collect();
    let mut t = Tally::default();
    let resolve = |t: &mut Tally, id: Uuid, r: &str| {
        t.missing.insert(id, 1);
        t.resolved.insert(id, (r.to_owned(), 2));
    };
    resolve(&mut t, ids[0], "recovered"); // dropped, found: right
    resolve(&mut t, ids[1], "advanced_no_answer"); // lost, advanced: right
    resolve(&mut t, ids[2], "advanced_no_answer"); // not lost, yet advanced: wrong
    t.missing.insert(ids[3], 1); // reported, never closed: wrong
                                 // ids[4]: dropped, never even reported missing: wrong
    let calls = vec![
        call("CA0", ids[0], true, false),
        call("CA1", ids[1], true, true),
        call("CA2", ids[2], true, false),
        call("CA3", ids[3], true, false),
        call("CA4", ids[4], true, false),
        call("CA5", ids[5], false, false), // delivered: not counted
    ];
    let d = dropped(&calls, &t, true);
    assert_eq!(
        (d.completions_dropped, d.calls_lost, d.recovered, d.advanced),
        (5, 1, 1, 1)
    );
    assert_eq!(d.not_closed, 3);
    assert!(d
        .examples
        .iter()
        .any(|e| e.contains("never reported missing")));
    // Without recovery, being reported missing is enough.
    let d = dropped(&calls, &t, false);
    assert_eq!(d.not_closed, 1, "{:?}", d.examples);
}

#[test]
fn crm_objects_are_counted_per_contact_and_launch() {
    let (l1, l2) = (Uuid::new_v4(), Uuid::new_v4());
    let calls = vec![call("CA1", l1, false, false), call("CA2", l2, false, false)];
    let mut t = Tally::default();
    let ops: Vec<Uuid> = (0..5).map(|_| Uuid::new_v4()).collect();
    let mut command = |op: Uuid, action: &str, call: &str| {
        t.crm_commands.insert(op, action.to_owned());
        t.crm_targets
            .insert(op, ("c-1".to_owned(), Some(call.to_owned())));
    };
    command(ops[0], "log_call", "CA1");
    command(ops[1], "create_task", "CA1");
    command(ops[2], "log_call", "CA2");
    command(ops[3], "update_contact", "CA2"); // an update: not an object
    command(ops[4], "log_call", "CA2"); // a replay under a new op id
    let stats = json!({"op_ids": {
        ops[0].to_string(): 1, ops[1].to_string(): 1, ops[2].to_string(): 1,
        ops[3].to_string(): 3, ops[4].to_string(): 1,
    }});
    let c = crm_per_launch(&stats, &calls, &t);
    assert_eq!((c.launches_with_call_record, c.launches_with_task), (2, 1));
    assert_eq!((c.max_call_records, c.max_tasks), (2, 1));
    assert_eq!(c.over_one, 1);
    assert!(c.examples[0].contains(&l2.to_string()), "{:?}", c.examples);
}
