use std::collections::BTreeMap;

use callstream_e2e::fixtures;
use callstream_schemas::{CrmAction, CrmCommand};
use chrono::DateTime;
use proptest::prelude::*;
use uuid::Uuid;

use super::*;

fn command(action: CrmAction, fact_ms: i64, properties: &[(&str, &str)]) -> CrmCommand {
    let at = DateTime::from_timestamp_millis(fact_ms).unwrap();
    CrmCommand {
        event_id: Uuid::from_u128(1),
        call_id: Some("call-1".into()),
        properties: properties
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        subject: Some("Follow up".into()),
        body: Some("Asked for a call back".into()),
        due_at: DateTime::from_timestamp_millis(fact_ms + 3_600_000),
        owner_id: Some("owner-7".into()),
        ..fixtures::crm_command("t1", "c-1", Uuid::from_u128(0xab), action, at)
    }
}

#[test]
fn every_create_carries_the_operation_id_and_its_association() {
    let cases = [
        (CrmAction::AddNote, "notes", 202, "hs_note_body"),
        (CrmAction::CreateTask, "tasks", 204, "hs_task_subject"),
        (CrmAction::LogCall, "calls", 194, "hs_call_title"),
    ];
    for (action, object_type, association, text_property) in cases {
        // A command property named like the op id cannot replace it.
        let cmd = command(action, 1_000, &[(OP_ID_PROPERTY, "forged")]);
        let kind = kind_of(action).unwrap();
        let request = write_request(&cmd, kind, BTreeMap::new());
        let (method, path) = request.method_and_path().unwrap();
        assert_eq!(
            (method, path.as_str()),
            ("POST", &*format!("/crm/v3/objects/{object_type}"))
        );
        let body = body(&request);
        assert_eq!(
            body["properties"][OP_ID_PROPERTY],
            cmd.operation_id.to_string()
        );
        assert!(
            body["properties"][text_property].is_string(),
            "{object_type}"
        );
        assert!(
            body["properties"]["hs_timestamp"].is_string(),
            "{object_type}"
        );
        assert_eq!(body["associations"][0]["to"]["id"], "c-1");
        assert_eq!(
            body["associations"][0]["types"][0]["associationTypeId"],
            association
        );
        let search = body_of_search(&cmd, kind);
        assert_eq!(search.0, format!("/crm/v3/objects/{object_type}/search"));
        assert_eq!(
            search.1["filterGroups"][0]["filters"][0]["value"],
            cmd.operation_id.to_string()
        );
    }
}

fn body_of_search(cmd: &CrmCommand, kind: WriteKind) -> (String, serde_json::Value) {
    let request = search_request(cmd, kind);
    (request.method_and_path().unwrap().1, body(&request))
}

#[test]
fn a_task_is_due_when_the_command_says() {
    let cmd = command(CrmAction::CreateTask, 1_000, &[]);
    let request = write_request(
        &cmd,
        kind_of(CrmAction::CreateTask).unwrap(),
        BTreeMap::new(),
    );
    assert_eq!(
        body(&request)["properties"]["hs_timestamp"],
        "1970-01-01T01:00:01.000Z"
    );
    assert_eq!(body(&request)["properties"]["hubspot_owner_id"], "owner-7");
}

#[test]
fn an_update_patches_the_contact_with_the_properties_given() {
    let cmd = command(CrmAction::UpdateContact, 1_000, &[("a", "1")]);
    let fresh = fresh_properties(&BTreeMap::new(), &cmd);
    let request = write_request(&cmd, WriteKind::Update, fresh);
    assert_eq!(
        request.method_and_path(),
        Ok(("PATCH", "/crm/v3/objects/contacts/c-1".to_owned()))
    );
    assert_eq!(
        body(&request),
        serde_json::json!({"properties": {"a": "1"}})
    );
    assert!(request.is_write());
}

#[test]
fn unknown_actions_are_unsupported() {
    assert!(kind_of(CrmAction::Unknown).is_err());
}

proptest! {
    /// A property is sent exactly when no newer fact was applied for it.
    #[test]
    fn fresh_properties_are_those_not_older_than_what_was_applied(
        applied in proptest::collection::btree_map("[a-d]", 0i64..10, 0..4),
        fact in 0i64..10,
        names in proptest::collection::btree_set("[a-e]", 0..5),
    ) {
        let props: Vec<(String, String)> = names.iter().map(|n| (n.clone(), "v".into())).collect();
        let pairs: Vec<(&str, &str)> = props.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let cmd = command(CrmAction::UpdateContact, fact, &pairs);
        let fresh = fresh_properties(&applied, &cmd);
        for name in &names {
            let newer_applied = applied.get(name).is_some_and(|&at| at > fact);
            prop_assert_eq!(fresh.contains_key(name), !newer_applied, "{}", name);
        }
        prop_assert!(fresh.keys().all(|k| names.contains(k)));
    }
}
