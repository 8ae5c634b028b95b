//! The `.avsc` files follow the project's rules, agree with the Rust types, and are
//! fingerprinted exactly as the Avro specification says.

mod support;

use std::collections::{BTreeMap, HashSet};

use apache_avro::{rabin::Rabin, Schema};
use callstream_schemas::{
    canonical_form, decode_any, fingerprint_of, headers, rabin, types::all_enums, Event, EventKind,
    Fingerprint,
};
use serde_json::Value as Json;

const NAMESPACE: &str = "io.callstream.events";

fn json(kind: EventKind) -> Json {
    serde_json::from_str(kind.schema_json()).expect("schema is JSON")
}

/// Every named type definition (records and enums) in a schema file: full name -> definition.
fn named_types(kind: EventKind) -> Vec<(String, Json)> {
    fn walk(j: &Json, out: &mut Vec<(String, Json)>) {
        match j {
            Json::Object(o) => {
                if let (Some(Json::String(t)), Some(Json::String(n))) =
                    (o.get("type"), o.get("name"))
                {
                    if matches!(t.as_str(), "record" | "enum" | "fixed") {
                        out.push((format!("{NAMESPACE}.{n}"), j.clone()));
                    }
                }
                o.values().for_each(|v| walk(v, out));
            }
            Json::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&json(kind), &mut out);
    out
}

#[test]
fn every_file_is_a_record_named_for_its_kind_in_the_namespace() {
    let mut names = HashSet::new();
    let mut fingerprints = HashSet::new();
    for &kind in EventKind::ALL {
        let j = json(kind);
        assert_eq!(j["namespace"], NAMESPACE, "{kind:?}");
        assert_eq!(
            kind.name(),
            format!("{NAMESPACE}.{}", j["name"].as_str().expect("name"))
        );
        assert_eq!(kind.name(), format!("{NAMESPACE}.{kind:?}"));
        assert!(names.insert(kind.name()), "duplicate name {}", kind.name());
        assert!(
            fingerprints.insert(kind.fingerprint()),
            "duplicate fingerprint {kind:?}"
        );
        assert!(j["doc"].is_string(), "{kind:?} has no doc");
        assert_eq!(EventKind::from_name(kind.name()), Some(kind));
    }
}

#[test]
fn every_record_starts_with_the_envelope() {
    let uuid = serde_json::json!({"type": "string", "logicalType": "uuid"});
    let ts = serde_json::json!({"type": "long", "logicalType": "timestamp-millis"});
    let expected = [
        ("event_id", uuid.clone()),
        ("tenant_id", Json::from("string")),
        ("occurred_at", ts),
        ("causation_id", serde_json::json!(["null", uuid])),
        ("correlation_id", serde_json::json!(["null", uuid])),
    ];
    for &kind in EventKind::ALL {
        let fields = json(kind)["fields"].as_array().expect("fields").clone();
        for (i, (name, ty)) in expected.iter().enumerate() {
            assert_eq!(fields[i]["name"], *name, "{kind:?} field {i}");
            assert_eq!(fields[i]["type"], *ty, "{kind:?}.{name}");
        }
    }
}

#[test]
fn optional_fields_are_null_first_with_a_null_default() {
    fn walk(kind: EventKind, j: &Json) {
        match j {
            Json::Object(o) => {
                if let (Some(Json::String(name)), Some(Json::Array(branches))) =
                    (o.get("name"), o.get("type"))
                {
                    assert_eq!(
                        branches.len(),
                        2,
                        "{kind:?}.{name}: unions are [\"null\", T]"
                    );
                    assert_eq!(branches[0], "null", "{kind:?}.{name}: null comes first");
                    assert_eq!(
                        o.get("default"),
                        Some(&Json::Null),
                        "{kind:?}.{name}: default null"
                    );
                }
                o.values().for_each(|v| walk(kind, v));
            }
            Json::Array(a) => a.iter().for_each(|v| walk(kind, v)),
            _ => {}
        }
    }
    for &kind in EventKind::ALL {
        walk(kind, &json(kind));
    }
}

#[test]
fn enums_end_in_an_unknown_default_and_match_their_rust_mirrors() {
    let mut in_schemas: BTreeMap<String, Json> = BTreeMap::new();
    for &kind in EventKind::ALL {
        for (name, def) in named_types(kind) {
            if def["type"] == "enum" {
                let symbols = def["symbols"].as_array().expect("symbols");
                assert_eq!(symbols.last(), Some(&Json::from("unknown")), "{name}");
                assert_eq!(
                    def["default"], "unknown",
                    "{name} needs default \"unknown\""
                );
                in_schemas.insert(name, def);
            }
        }
    }
    let rust = all_enums();
    assert_eq!(
        rust.iter()
            .map(|(n, _)| n.to_string())
            .collect::<HashSet<_>>(),
        in_schemas.keys().cloned().collect::<HashSet<_>>(),
        "every Avro enum has exactly one Rust mirror"
    );
    for (name, symbols) in rust {
        let def = &in_schemas[name];
        let avro: Vec<&str> = def["symbols"]
            .as_array()
            .expect("symbols")
            .iter()
            .map(|s| s.as_str().expect("symbol"))
            .collect();
        assert_eq!(
            symbols, avro,
            "{name}: Rust variants and Avro symbols differ"
        );
    }
}

#[test]
fn a_named_type_is_defined_identically_in_every_file() {
    let mut seen: BTreeMap<String, (EventKind, Json)> = BTreeMap::new();
    for &kind in EventKind::ALL {
        for (name, def) in named_types(kind) {
            if let Some((first, earlier)) = seen.get(&name) {
                assert_eq!(
                    earlier, &def,
                    "{name} differs between {first:?} and {kind:?}"
                );
            } else {
                seen.insert(name, (kind, def));
            }
        }
    }
    // The shared ones really are shared.
    for shared in [
        "Actor",
        "CallOutcome",
        "JobOrigin",
        "ZoneSource",
        "CallingWindow",
        "CrmAction",
    ] {
        assert!(
            seen.contains_key(&format!("{NAMESPACE}.{shared}")),
            "{shared}"
        );
    }
}

/// Vectors from the Avro project's shared test data (share/test/data/schema-tests.txt), which
/// the Java implementation cross-checks: input, canonical form, fingerprint as a signed long.
#[test]
fn canonical_form_and_fingerprint_follow_the_specification() {
    let vectors: &[(&str, &str, i64)] = &[
        (r#""null""#, r#""null""#, 7195948357588979594),
        (
            r#"{"type":"boolean"}"#,
            r#""boolean""#,
            -6970731678124411036,
        ),
        (r#""int""#, r#""int""#, 8247732601305521295),
        (r#"{"type":"long"}"#, r#""long""#, -3434872931120570953),
        (r#""string""#, r#""string""#, -8142146995180207161),
        (
            r#"[ "int" , {"type":"boolean"} ]"#,
            r#"["int","boolean"]"#,
            5392556393470105090,
        ),
        (
            r#"{"fields":[], "type":"record", "name":"foo", "namespace":"x.y"}"#,
            r#"{"name":"x.y.foo","type":"record","fields":[]}"#,
            5916914534497305771,
        ),
        (
            r#"{"fields":[], "type":"record", "name":"a.b.foo", "namespace":"x.y"}"#,
            r#"{"name":"a.b.foo","type":"record","fields":[]}"#,
            -4616218487480524110,
        ),
        (
            r#"{ "fields":[{"type":"boolean", "aliases":[], "name":"f1", "default":"true"},
                 {"order":"descending","name":"f2","doc":"Hello","type":"int"}],
               "type":"record", "name":"foo" }"#,
            r#"{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"},{"name":"f2","type":"int"}]}"#,
            -4860222112080293046,
        ),
        (
            r#"{"namespace":"x.y.z", "type":"enum", "name":"foo", "doc":"foo bar", "symbols":["A1", "A2"]}"#,
            r#"{"name":"x.y.z.foo","type":"enum","symbols":["A1","A2"]}"#,
            -4448647247586288245,
        ),
        (
            r#"{"name":"foo","type":"fixed","size":15}"#,
            r#"{"name":"foo","type":"fixed","size":15}"#,
            1756455273707447556,
        ),
        (
            r#"{ "items":{"type":"null"}, "type":"array"}"#,
            r#"{"type":"array","items":"null"}"#,
            -589620603366471059,
        ),
        (
            r#"{ "values":"string", "type":"map"}"#,
            r#"{"type":"map","values":"string"}"#,
            -8732877298790414990,
        ),
        (
            r#"{"name":"PigValue","type":"record",
                "fields":[{"name":"value", "type":["null", "int", "long", "PigValue"]}]}"#,
            r#"{"name":"PigValue","type":"record","fields":[{"name":"value","type":["null","int","long","PigValue"]}]}"#,
            -1759257747318642341,
        ),
        // [PRIMITIVES] + [STRIP]: a logical type is its primitive, as Java computes it.
        (
            r#"{"type":"long","logicalType":"timestamp-millis"}"#,
            r#""long""#,
            -3434872931120570953,
        ),
        (
            r#"{"type":"string","logicalType":"uuid"}"#,
            r#""string""#,
            -8142146995180207161,
        ),
    ];
    for (input, canonical, fp) in vectors {
        assert_eq!(canonical_form(input).expect(input), *canonical, "{input}");
        assert_eq!(
            fingerprint_of(input).expect(input).as_u64() as i64,
            *fp,
            "{input}"
        );
    }
}

#[test]
fn rabin_agrees_with_apache_avro_where_canonical_forms_agree() {
    // Without logical types apache-avro's canonical form is the spec's, so the digests must match.
    for input in [
        r#""null""#,
        r#"{"type":"record","name":"r","namespace":"n","fields":[{"name":"a","type":["null","string"]},{"name":"e","type":{"type":"enum","name":"E","symbols":["x"]}}]}"#,
    ] {
        let schema = Schema::parse_str(input).expect("parses");
        assert_eq!(schema.canonical_form(), canonical_form(input).expect("pcf"));
        assert_eq!(
            schema.fingerprint::<Rabin>().bytes,
            rabin(schema.canonical_form().as_bytes()).0
        );
    }
}

#[test]
fn every_schema_canonical_form_reparses_to_the_same_fingerprint() {
    for &kind in EventKind::ALL {
        let info = kind.info();
        assert_eq!(
            info.fingerprint,
            fingerprint_of(&info.canonical_form).expect("pcf of pcf")
        );
        Schema::parse_str(&info.canonical_form).expect("canonical form is a schema");
    }
}

#[test]
fn headers_name_the_type_and_fingerprint_and_carry_the_chain() {
    let kind = EventKind::CrmResult;
    let value = support::sample(kind);
    let bytes = support::written_by(kind.schema(), kind.fingerprint(), value);
    let event = decode_any(&bytes).expect("sample");
    let envelope = event.envelope();
    let hs = headers::event_headers(kind, &envelope);
    let get = |name: &str| hs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
    assert_eq!(
        get(headers::EVENT_TYPE).as_deref(),
        Some("io.callstream.events.CrmResult")
    );
    assert_eq!(
        headers::kind_of(get(headers::EVENT_TYPE).expect("type").as_bytes()),
        Some(kind)
    );
    let fp = get(headers::SCHEMA_FINGERPRINT).expect("fingerprint");
    assert_eq!(Fingerprint::parse_hex(&fp), Some(kind.fingerprint()));
    assert_eq!(
        fp,
        format!(
            "{:016x}",
            u64::from_le_bytes(bytes[2..10].try_into().expect("8"))
        )
    );
    assert_eq!(
        get(headers::CAUSATION_ID),
        envelope.causation_id.map(|c| c.to_string())
    );
    assert_eq!(
        get(headers::CORRELATION_ID),
        envelope.correlation_id.map(|c| c.to_string())
    );
    assert_eq!(
        get(headers::TRACEPARENT),
        None,
        "traceparent is the caller's"
    );
    assert_eq!(event.kafka_headers(), hs);
    assert_eq!(headers::kind_of(b"io.callstream.events.Nope"), None);
    assert_eq!(headers::kind_of(&[0xff]), None);
    assert_eq!(callstream_schemas::CrmResult::name(), kind.name());
}

#[test]
fn fingerprint_hex_round_trips_and_rejects_junk() {
    for &kind in EventKind::ALL {
        let fp = kind.fingerprint();
        assert_eq!(Fingerprint::parse_hex(&fp.to_string()), Some(fp));
    }
    for junk in ["", "abc", "zzzzzzzzzzzzzzzz", "0123456789abcdef0"] {
        assert_eq!(Fingerprint::parse_hex(junk), None, "{junk}");
    }
}

/// The v1 fingerprints as Java Avro 1.12.0 computes them (`SchemaNormalization`, via
/// `interop/JavaCheck.java`). Frozen files never change, so neither do these; a new frozen
/// version may add its line after running the Java check.
#[test]
fn frozen_v1_fingerprints_equal_what_java_computes() {
    let java: &[(&str, &str)] = &[
        ("call_event", "0aefe2b3ddc1058c"),
        ("contact_command", "6ab422bedcac08b2"),
        ("schedule_request", "bd068d04c2cdb179"),
        ("schedule_event", "a2728d405b9b110f"),
        ("launch_command", "c55782a7e41c39d0"),
        ("call_launch", "43f7fe4b90e30af8"),
        ("completion_missing", "958d627fef3a7da3"),
        ("completion_resolved", "f85fb718ab6c3441"),
        ("crm_command", "0196f1ac436b9bba"),
        ("crm_result", "f07ef68a7073ff0d"),
        ("exception", "cdbfe68c63ae68d4"),
        ("control_change", "af11c36d4abb8a27"),
        ("alert", "d1f4fb42c63c7dc2"),
        ("audit_event", "98f13f405c0b357b"),
    ];
    for &(stem, hex) in java {
        let kind = EventKind::ALL
            .iter()
            .copied()
            .find(|k| k.file_stem() == stem)
            .expect("known stem");
        let v1 = kind.frozen_versions().next().expect("v1");
        assert_eq!(v1.fingerprint.to_string(), hex, "{stem}.v1");
    }
}
