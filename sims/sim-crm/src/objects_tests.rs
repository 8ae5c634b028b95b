use serde_json::json;

use super::*;

fn body(v: Value) -> WriteBody {
    serde_json::from_value(v).unwrap()
}

#[test]
fn types_by_name_and_id() {
    assert_eq!(ObjectType::parse("tasks"), Ok(ObjectType::Tasks));
    assert_eq!(ObjectType::parse("0-1"), Ok(ObjectType::Contacts));
    assert!(ObjectType::parse("widgets").is_err());
}

#[test]
fn creates_are_validated() {
    let task = |props: Value, assoc: Value| {
        read_create(
            ObjectType::Tasks,
            body(json!({"properties": props, "associations": assoc})),
        )
    };
    let assoc = json!([{"to": {"id": "c-1"}, "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 204}]}]);
    let (props, links) = task(
        json!({"hs_timestamp": "2026-01-01T00:00:00Z", "hs_task_priority": "HIGH", "n": 3, "b": true}),
        assoc.clone(),
    )
    .unwrap();
    assert_eq!(props["n"], "3");
    assert_eq!(props["b"], "true");
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].target(), "contact");

    let cases = [
        (
            "no timestamp",
            json!({"hs_task_subject": "x"}),
            assoc.clone(),
        ),
        (
            "empty timestamp",
            json!({"hs_timestamp": ""}),
            assoc.clone(),
        ),
        (
            "object value",
            json!({"hs_timestamp": "1", "x": {"a": 1}}),
            assoc.clone(),
        ),
        (
            "no types",
            json!({"hs_timestamp": "1"}),
            json!([{"to": {"id": "c-1"}, "types": []}]),
        ),
        (
            "bad category",
            json!({"hs_timestamp": "1"}),
            json!([{"to": {"id": "c-1"}, "types": [{"associationCategory": "MINE", "associationTypeId": 1}]}]),
        ),
        (
            "no target",
            json!({"hs_timestamp": "1"}),
            json!([{"to": {"id": ""}, "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 204}]}]),
        ),
    ];
    for (name, props, assoc) in cases {
        assert!(
            matches!(task(props, assoc), Err(CrmError::Validation(_))),
            "{name}"
        );
    }
    // Contacts need nothing.
    assert!(read_create(ObjectType::Contacts, body(json!({"properties": {}}))).is_ok());
}

#[test]
fn answers_show_defaults_or_everything() {
    let now = Utc::now();
    let mut o = CrmObject::new(ObjectType::Notes, "7".into(), 0, now, Instant::now());
    o.apply([("hs_note_body".to_string(), "hi".to_string())].into(), now);
    let all = o.to_json(Shown::All, false);
    assert_eq!(all["properties"]["hs_note_body"], "hi");
    assert_eq!(all["properties"]["hs_object_id"], "7");
    let some = o.to_json(Shown::DefaultsAnd(&["missing".to_string()]), false);
    assert!(some["properties"].get("hs_note_body").is_none());
    assert_eq!(some["properties"]["missing"], Value::Null);
    assert!(some["properties"]["hs_createdate"].is_string());
    assert_eq!(some["archived"], false);
}
