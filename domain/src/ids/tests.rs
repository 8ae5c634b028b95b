//! Every id rule pinned twice: to the name it was first derived from (the
//! code each rule replaced, spelled out with `Uuid::new_v5`), and to known
//! values, so no change of the rules' code can change an id on the topics.

use super::*;

/// `Uuid::new_v5` over a name built by hand: the reference every rule answers to.
fn v5(namespace: &Uuid, name: &[u8]) -> Uuid {
    Uuid::new_v5(namespace, name)
}

fn framed32(parts: &[&[u8]]) -> Vec<u8> {
    let mut name = Vec::new();
    for part in parts {
        name.extend_from_slice(&(part.len() as u32).to_be_bytes());
        name.extend_from_slice(part);
    }
    name
}

fn framed64(parts: &[&[u8]]) -> Vec<u8> {
    let mut name = Vec::new();
    for part in parts {
        name.extend_from_slice(&(part.len() as u64).to_be_bytes());
        name.extend_from_slice(part);
    }
    name
}

#[test]
fn derive_is_uuid_v5_of_the_name_its_parts_make() {
    let ns = Uuid::from_u128(99);
    let long = "x".repeat(300);
    let cases: &[&[&str]] = &[
        &[],
        &[""],
        &["a", ""],
        &["tenant", "json", "msg_1"],
        &[&long, "é"],
    ];
    for parts in cases {
        let bytes: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
        let framed: Vec<Part<'_>> = bytes.iter().map(|b| Part::Framed(b)).collect();
        let wide: Vec<Part<'_>> = bytes.iter().map(|b| Part::Framed64(b)).collect();
        let raw: Vec<Part<'_>> = bytes.iter().map(|b| Part::Raw(b)).collect();
        assert_eq!(
            derive(&ns, &framed),
            v5(&ns, &framed32(&bytes)),
            "{parts:?}"
        );
        assert_eq!(
            derive_framed(&ns, parts),
            v5(&ns, &framed32(&bytes)),
            "{parts:?}"
        );
        assert_eq!(derive(&ns, &wide), v5(&ns, &framed64(&bytes)), "{parts:?}");
        assert_eq!(derive(&ns, &raw), v5(&ns, &bytes.concat()), "{parts:?}");
    }
}

#[test]
fn framed_names_are_unambiguous() {
    let ns = namespace::GATEWAY;
    let a = derive_framed(&ns, &["t1", "twilio", "CA1", "completed", "3"]);
    for other in [
        derive_framed(&ns, &["t2", "twilio", "CA1", "completed", "3"]),
        derive_framed(&ns, &["t1", "twilio", "CA1completed", "", "3"]),
        derive_framed(&ns, &["t1twilio", "CA1", "completed", "3"]),
    ] {
        assert_ne!(a, other);
    }
    assert_eq!(a.get_version_num(), 5);
}

#[test]
fn namespaces_are_the_documented_derivations() {
    let url = |s: &str| Uuid::new_v5(&Uuid::NAMESPACE_URL, s.as_bytes());
    assert_eq!(
        namespace::CONTACT,
        url("https://callstream.dev/ns/contact-processor")
    );
    assert_eq!(namespace::LAUNCH, url("https://callstream.dev/ns/launch"));
    assert_eq!(
        namespace::CRM_DISPATCHER,
        url("https://callstream.dev/ns/crm-dispatcher")
    );
    assert_eq!(
        namespace::CRM_COMMAND,
        url("https://callstream.dev/ns/crm-command")
    );
    assert_eq!(namespace::DEDUPE, url("https://callstream.dev/ns/dedupe"));
}

/// Each rule against the code it replaced.
#[test]
fn every_rule_derives_the_name_it_always_derived() {
    let (launch, job, cause) = (Uuid::from_u128(7), Uuid::from_u128(8), Uuid::from_u128(42));
    let gw = |parts: &[&str]| {
        let bytes: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
        v5(&namespace::GATEWAY, &framed32(&bytes))
    };
    let case = |parts: &[&[u8]]| v5(&namespace::COMPLETION_CASE, &framed32(parts));
    let l = launch.to_string();
    let cmd = job.to_string();

    assert_eq!(
        gateway::twilio_call_event("t", "CA1", "completed", "3"),
        gw(&["t", "twilio", "CA1", "completed", "3"])
    );
    assert_eq!(
        gateway::json_call_event("t", "msg_1"),
        gw(&["t", "json", "msg_1"])
    );
    assert_eq!(
        gateway::contact_update("t", "r1"),
        gw(&["t", "contact-update", "r1"])
    );
    assert_eq!(
        gateway::launch_request("t", "r1"),
        gw(&["t", "launch-request", "r1"])
    );

    assert_eq!(
        recovery::call_event("t", "json", "c1", "completed"),
        gw(&["recovery", "t", "json", "c1", "completed"])
    );
    assert_eq!(
        recovery::advance("t", &launch, "no_answer"),
        gw(&["recovery-advance", "t", &l, "no_answer"])
    );
    assert_eq!(
        recovery::audit(&launch, "recovery.recovered", None),
        gw(&["recovery-audit", &l, "recovery.recovered", ""])
    );
    assert_eq!(
        recovery::audit(&launch, "a", Some(&job)),
        gw(&["recovery-audit", &l, "a", &cmd])
    );
    assert_eq!(
        recovery::rejected_command_audit(&job),
        gw(&["recovery-audit-rejected", &cmd])
    );

    let lb = launch.as_bytes().as_slice();
    assert_eq!(
        completion_case::missing_event(&launch),
        case(&[b"completion-missing", lb])
    );
    assert_eq!(
        completion_case::missing_exception(&launch),
        case(&[b"exception/completion-missing", lb])
    );
    assert_eq!(
        completion_case::recovery_failed_exception(&launch),
        case(&[b"exception/recovery-failed", lb])
    );
    assert_eq!(
        completion_case::exception_event(&launch, "open"),
        case(&[b"exception-event", lb, b"open"])
    );
    assert_eq!(
        completion_case::resolved_event(&launch),
        case(&[b"completion-resolved", lb])
    );
    assert_eq!(
        completion_case::alert("t1", 600_000),
        case(&[b"delivery-alert", b"t1", &600_000i64.to_be_bytes()])
    );
    assert_eq!(
        completion_case::alert_event(&launch, "raised"),
        case(&[b"alert-event", lb, b"raised"])
    );

    assert_eq!(
        contact::derived(cause, &["job", "x"]),
        v5(
            &namespace::CONTACT,
            &framed64(&[cause.as_bytes(), b"job", b"x"])
        )
    );
    assert_eq!(
        contact::launch("t1", job),
        v5(&namespace::LAUNCH, &framed64(&[b"t1", cmd.as_bytes()]))
    );

    let mut seed = b"allocated/".to_vec();
    seed.extend_from_slice(cause.as_bytes());
    assert_eq!(
        scheduler::derived("allocated", cause),
        v5(&namespace::SCHEDULER, &seed)
    );
    let mut seed = b"launch_due/".to_vec();
    seed.extend_from_slice(&2u64.to_be_bytes());
    seed.extend_from_slice(b"t1");
    seed.extend_from_slice(job.as_bytes());
    assert_eq!(
        scheduler::for_job("launch_due", "t1", job),
        v5(&namespace::SCHEDULER, &seed)
    );
    seed.extend_from_slice(&5u64.to_be_bytes());
    assert_eq!(
        scheduler::for_slot("launch_due", "t1", job, 5),
        v5(&namespace::SCHEDULER, &seed)
    );

    assert_eq!(
        launch_dispatcher::event(&launch, "accepted"),
        v5(
            &namespace::LAUNCH_DISPATCHER,
            format!("{launch}/accepted").as_bytes()
        )
    );
    assert_eq!(
        crm_dispatcher::event(&launch, "result", 2),
        v5(
            &namespace::CRM_DISPATCHER,
            format!("{launch}/result/2").as_bytes()
        )
    );
    assert_eq!(
        crm_dispatcher::exception(&launch, 1),
        crm_dispatcher::event(&launch, "exception", 1)
    );
    assert_eq!(
        control::change(&job, "t1/system_pause"),
        v5(&job, b"t1/system_pause")
    );
    assert_eq!(
        crm_command("t1", "CA1", "log_call"),
        v5(
            &namespace::CRM_COMMAND,
            &framed64(&[b"t1", b"CA1", b"log_call"])
        )
    );
    assert_eq!(dedupe::event("ev-1"), v5(&namespace::DEDUPE, b"eev-1"));
    let mut name = b"c".to_vec();
    name.extend_from_slice(&3u64.to_be_bytes());
    name.extend_from_slice(b"CA1answered");
    assert_eq!(
        dedupe::call_outcome("CA1", "answered"),
        v5(&namespace::DEDUPE, &name)
    );
}

/// Known values: ids already written were derived this way. If one of these
/// fails, a rule changed and every stored id of that kind with it.
#[test]
fn every_rule_keeps_its_known_values() {
    let (launch, job, cause) = (Uuid::from_u128(7), Uuid::from_u128(8), Uuid::from_u128(42));
    let cases: Vec<(&str, Uuid, &str)> = vec![
        (
            "twilio",
            gateway::twilio_call_event("t1", "CA1", "completed", "3"),
            "ba722aa0-e5da-52a3-89a1-4126440d0051",
        ),
        (
            "json",
            gateway::json_call_event("t1", "msg_1"),
            "789cbccf-2593-5bda-85ee-161d3d41cb8e",
        ),
        (
            "launch request",
            gateway::launch_request("t1", "r1"),
            "1244b670-b0e8-5947-ad4a-0844e8f0b08d",
        ),
        (
            "recovered",
            recovery::call_event("t1", "json", "c1", "completed"),
            "37cf6c19-48fe-57a2-9aeb-ccd82c13d776",
        ),
        (
            "advance",
            recovery::advance("t1", &launch, "no_answer"),
            "277ab517-4a84-5951-a8d8-cf2daca0b77a",
        ),
        (
            "audit",
            recovery::audit(&launch, "recovery.recovered", Some(&job)),
            "85caae6b-8a88-56c8-bb43-c7c12bd06a95",
        ),
        (
            "rejected",
            recovery::rejected_command_audit(&job),
            "b3c8bb68-64d0-5c26-896d-7c87aeb9b933",
        ),
        (
            "missing",
            completion_case::missing_event(&launch),
            "ea0c6294-fca5-5ceb-aea7-f60785b06b35",
        ),
        (
            "missing exception",
            completion_case::missing_exception(&launch),
            "21a0ce76-d5ea-5183-9184-ceedece6f847",
        ),
        (
            "recovery failed",
            completion_case::recovery_failed_exception(&launch),
            "8de1735e-5465-5b4c-a641-da763cff8689",
        ),
        (
            "exception event",
            completion_case::exception_event(&launch, "open"),
            "724a591b-c844-583b-ae75-b56a4270443e",
        ),
        (
            "resolved",
            completion_case::resolved_event(&launch),
            "bcb5163c-4be2-56c4-ad30-d3d850aa7fd6",
        ),
        (
            "alert",
            completion_case::alert("t1", 600_000),
            "8070da69-7a1f-53c9-9510-87937c8b127f",
        ),
        (
            "alert event",
            completion_case::alert_event(&launch, "raised"),
            "de673dda-9a88-527c-9408-e1a9430f7d8a",
        ),
        (
            "contact derived",
            contact::derived(cause, &["job", "x"]),
            "b7f5ab73-3e8e-5332-9410-4ac19e1a29f6",
        ),
        (
            "launch",
            contact::launch("t1", job),
            "32b6e0e9-52f9-56fc-8340-1050129c9df7",
        ),
        (
            "scheduler derived",
            scheduler::derived("allocated", cause),
            "5682b2e6-626b-58e2-8e17-2dfaa394927e",
        ),
        (
            "scheduler job",
            scheduler::for_job("case", "t1", job),
            "df67ff81-33bd-55df-81e0-094d5249629e",
        ),
        (
            "scheduler slot",
            scheduler::for_slot("launch_due", "t1", job, 5),
            "86cb6c5c-87d7-57fb-86e1-bc429b2990f5",
        ),
        (
            "launch event",
            launch_dispatcher::event(&launch, "accepted"),
            "be171682-d2f9-5f79-a1d9-f8b7a4261fb1",
        ),
        (
            "crm event",
            crm_dispatcher::event(&launch, "result", 2),
            "4a68cdab-9569-5e46-a480-31dd49645fd6",
        ),
        (
            "crm command",
            crm_command("t1", "CA1", "log_call"),
            "1c09063c-41e5-56c5-9007-a949b7bc02cf",
        ),
        (
            "dedupe event",
            dedupe::event("ev-1"),
            "5e50355a-d11a-5611-b654-2b7b7a270a50",
        ),
        (
            "dedupe call",
            dedupe::call_outcome("CA1", "answered"),
            "14ae3b41-f426-57d6-a986-f0806f902e55",
        ),
        (
            "control change",
            control::change(&job, "t1/system_pause"),
            "d0c8722c-6823-598c-bf60-74b91807e314",
        ),
    ];
    let mut wrong = Vec::new();
    for (rule, id, known) in &cases {
        if id.to_string() != *known {
            wrong.push(format!("{rule}: {id} (known {known})"));
        }
    }
    assert!(
        wrong.is_empty(),
        "rules that changed:\n{}",
        wrong.join("\n")
    );
    assert!((0.0..1.0).contains(&contact::jitter_of(cause)));
    assert_eq!(contact::jitter_of(cause), contact::jitter_of(cause));
}

#[test]
fn an_ignore_targets_a_case_by_its_exceptions_or_its_launch_alone() {
    use completion_case::*;
    let (launch, other) = (Uuid::from_u128(7), Uuid::from_u128(8));
    let missing = missing_exception(&launch);
    let failed = recovery_failed_exception(&launch);
    assert!(ignore_targets_case(Some(launch), Some(missing)));
    assert!(ignore_targets_case(Some(launch), Some(failed)));
    assert!(ignore_targets_case(Some(launch), None));
    assert!(!ignore_targets_case(Some(other), Some(missing)));
    assert!(!ignore_targets_case(Some(launch), Some(Uuid::from_u128(9))));
    assert!(!ignore_targets_case(None, Some(missing)));
    assert!(!ignore_targets_case(None, None));
}

#[test]
fn the_ids_of_one_launch_are_distinct_per_purpose() {
    use completion_case::*;
    let launch = Uuid::from_u128(7);
    let mut all = vec![
        missing_event(&launch),
        missing_exception(&launch),
        recovery_failed_exception(&launch),
        resolved_event(&launch),
        exception_event(&missing_exception(&launch), "open"),
        exception_event(&missing_exception(&launch), "resolved"),
    ];
    let count = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), count);
    assert_ne!(alert("t1", 0), alert("t1", 600_000));
    assert_ne!(contact::launch("t1", launch), contact::launch("t2", launch));
    assert_ne!(
        scheduler::for_job("case", "a", launch),
        scheduler::for_job("case", "b", launch)
    );
}

#[test]
fn a_hold_names_one_timeline_entry() {
    let job = Uuid::from_u128(7);
    assert_eq!(
        view::timeline_hold(job, 1_000),
        view::timeline_hold(job, 1_000)
    );
    assert_ne!(
        view::timeline_hold(job, 1_000),
        view::timeline_hold(job, 2_000)
    );
    assert_ne!(
        view::timeline_hold(job, 1_000),
        view::timeline_hold(Uuid::from_u128(8), 1_000)
    );
}

#[test]
fn a_holds_timeline_entry_is_pinned() {
    let job = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
    assert_eq!(
        view::timeline_hold(job, 1_764_000_000_000),
        contact::derived(job, &["timeline/held", "1764000000000"])
    );
    assert_eq!(
        view::timeline_hold(job, 1_764_000_000_000).to_string(),
        "3e2925bd-3d05-5f74-919d-c7b91b086685"
    );
}

#[test]
fn a_dead_letter_is_named_by_where_it_sits() {
    let id = view::dead_letter("acme-dead-letters", 3, 1_234);
    assert_eq!(id, view::dead_letter("acme-dead-letters", 3, 1_234));
    assert_ne!(id, view::dead_letter("acme-dead-letters", 3, 1_235));
    assert_ne!(id, view::dead_letter("acme-dead-letters", 4, 1_234));
    assert_eq!(
        id,
        derive_framed(&namespace::DEAD_LETTER, &["acme-dead-letters", "3", "1234"])
    );
    assert_eq!(id.to_string(), "857fc89d-f3e4-5f2f-a9b1-a829b7fdd503");
}
