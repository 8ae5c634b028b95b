use std::time::Instant;

use chrono::Utc;
use serde_json::json;

use super::*;
use crate::objects::{Association, ObjectType};

fn task(seq: u64, props: &[(&str, &str)], contact: Option<&str>) -> CrmObject {
    let mut o = CrmObject::new(
        ObjectType::Tasks,
        (100 + seq).to_string(),
        seq,
        Utc::now(),
        Instant::now(),
    );
    o.apply(
        props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        Utc::now(),
    );
    if let Some(c) = contact {
        o.associations.push(Association {
            to_id: c.into(),
            category: "HUBSPOT_DEFINED".into(),
            type_id: 204,
        });
    }
    o
}

fn body(v: serde_json::Value) -> SearchBody {
    serde_json::from_value(v).unwrap()
}

fn hits(b: &SearchBody, objects: &[CrmObject]) -> Vec<u64> {
    objects
        .iter()
        .filter(|o| b.matches(o).unwrap())
        .map(|o| o.seq)
        .collect()
}

#[test]
fn operators() {
    let objects = vec![
        task(0, &[("callstream_op_id", "op-a"), ("n", "5")], Some("c-1")),
        task(1, &[("callstream_op_id", "op-b"), ("n", "12")], Some("c-2")),
        task(
            2,
            &[("n", "7"), ("hs_task_subject", "Call Back Lead")],
            None,
        ),
    ];
    let f = |prop: &str, op: &str, extra: serde_json::Value| {
        let mut filter = json!({"propertyName": prop, "operator": op});
        if let serde_json::Value::Object(m) = extra {
            for (k, v) in m {
                filter[k] = v;
            }
        }
        body(json!({"filterGroups": [{"filters": [filter]}]}))
    };
    let cases: Vec<(&str, SearchBody, Vec<u64>)> = vec![
        (
            "EQ",
            f("callstream_op_id", "EQ", json!({"value": "op-b"})),
            vec![1],
        ),
        (
            "NEQ",
            f("callstream_op_id", "NEQ", json!({"value": "op-b"})),
            vec![0, 2],
        ),
        ("numeric GT", f("n", "GT", json!({"value": 6})), vec![1, 2]),
        (
            "numeric LTE",
            f("n", "LTE", json!({"value": "7"})),
            vec![0, 2],
        ),
        (
            "BETWEEN",
            f("n", "BETWEEN", json!({"value": 6, "highValue": 12})),
            vec![1, 2],
        ),
        (
            "IN",
            f(
                "callstream_op_id",
                "IN",
                json!({"values": ["op-a", "op-z"]}),
            ),
            vec![0],
        ),
        (
            "NOT_IN",
            f("callstream_op_id", "NOT_IN", json!({"values": ["op-a"]})),
            vec![1, 2],
        ),
        (
            "HAS_PROPERTY",
            f("callstream_op_id", "HAS_PROPERTY", json!({})),
            vec![0, 1],
        ),
        (
            "NOT_HAS_PROPERTY",
            f("callstream_op_id", "NOT_HAS_PROPERTY", json!({})),
            vec![2],
        ),
        (
            "CONTAINS_TOKEN",
            f(
                "hs_task_subject",
                "CONTAINS_TOKEN",
                json!({"value": "back"}),
            ),
            vec![2],
        ),
        (
            "association",
            f("associations.contact", "EQ", json!({"value": "c-2"})),
            vec![1],
        ),
        ("no filters: all", body(json!({})), vec![0, 1, 2]),
    ];
    for (name, b, want) in cases {
        assert_eq!(hits(&b, &objects), want, "{name}");
    }
}

#[test]
fn groups_or_filters_and() {
    let objects = vec![
        task(0, &[("a", "1"), ("b", "1")], None),
        task(1, &[("a", "1"), ("b", "2")], None),
        task(2, &[("a", "2"), ("b", "2")], None),
    ];
    let b = body(json!({"filterGroups": [
        {"filters": [{"propertyName": "a", "operator": "EQ", "value": "1"}, {"propertyName": "b", "operator": "EQ", "value": "2"}]},
        {"filters": [{"propertyName": "a", "operator": "EQ", "value": "2"}]},
    ]}));
    assert_eq!(hits(&b, &objects), vec![1, 2]);
}

#[test]
fn refusals() {
    let o = task(0, &[], None);
    let bad_op = body(
        json!({"filterGroups": [{"filters": [{"propertyName": "a", "operator": "LIKE", "value": "1"}]}]}),
    );
    assert!(bad_op.matches(&o).is_err());
    let no_value =
        body(json!({"filterGroups": [{"filters": [{"propertyName": "a", "operator": "EQ"}]}]}));
    assert!(no_value.matches(&o).is_err());
    let groups: Vec<serde_json::Value> = (0..6).map(|_| json!({"filters": []})).collect();
    assert!(body(json!({"filterGroups": groups})).check().is_err());
    assert!(body(json!({"after": "x"})).page().is_err());
    assert_eq!(
        body(json!({"limit": 1000, "after": "20"})).page().unwrap(),
        (20, MAX_LIMIT)
    );
    assert_eq!(body(json!({})).page().unwrap(), (0, DEFAULT_LIMIT));
}

#[test]
fn sorting() {
    let objects = [task(0, &[("n", "10")], None), task(1, &[("n", "9")], None)];
    let mut refs: Vec<&CrmObject> = objects.iter().collect();
    body(json!({"sorts": ["n"]})).sort(&mut refs);
    assert_eq!(refs[0].seq, 1, "numeric, not text, order");
    body(json!({"sorts": [{"propertyName": "n", "direction": "DESCENDING"}]})).sort(&mut refs);
    assert_eq!(refs[0].seq, 0);
}
