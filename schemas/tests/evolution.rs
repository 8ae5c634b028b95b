//! The evolution gate: every current schema can read data written with every released
//! (frozen) version of it, and with the version at git HEAD. An incompatible change fails here.
//!
//! The rule (schemas/README.md): a schema change that changes the fingerprint must be frozen
//! as `history/<stem>.v<N+1>.avsc` in the same commit, and frozen files never change.

mod support;

use std::{collections::BTreeMap, path::Path, process::Command};

use apache_avro::{schema_compatibility::SchemaCompatibility, Schema};
use callstream_schemas::{decode_any, EventKind, SchemaInfo};
use proptest::prelude::*;
use support::{value_of, written_by};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn frozen(kind: EventKind) -> Vec<&'static SchemaInfo> {
    kind.frozen_versions().collect()
}

#[test]
fn every_history_file_is_a_numbered_version_of_a_current_schema() {
    let mut on_disk: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for entry in std::fs::read_dir(manifest_dir().join("history")).expect("history/ exists") {
        let name = entry
            .expect("entry")
            .file_name()
            .into_string()
            .expect("UTF-8 name");
        let (stem, version) = name
            .strip_suffix(".avsc")
            .and_then(|s| s.rsplit_once(".v"))
            .unwrap_or_else(|| panic!("history/{name}: expected <schema>.v<N>.avsc"));
        let version: u32 = version.parse().unwrap_or_else(|_| panic!("history/{name}"));
        on_disk.entry(stem.to_owned()).or_default().push(version);
    }
    for stem in on_disk.keys() {
        assert!(
            EventKind::ALL.iter().any(|k| k.file_stem() == stem),
            "history/{stem}.*: no schemas/{stem}.avsc (event types are never removed)"
        );
    }
    for &kind in EventKind::ALL {
        let mut versions = on_disk.get(kind.file_stem()).cloned().unwrap_or_default();
        versions.sort_unstable();
        let expected: Vec<u32> = (1..=versions.len() as u32).collect();
        assert_eq!(
            versions,
            expected,
            "{}: versions must be 1..=N",
            kind.file_stem()
        );
        let embedded: Vec<u32> = frozen(kind).iter().filter_map(|f| f.version).collect();
        assert_eq!(
            embedded,
            expected,
            "{}: build embedded other files",
            kind.file_stem()
        );
    }
}

#[test]
fn the_current_schema_is_its_newest_frozen_version() {
    for &kind in EventKind::ALL {
        let versions = frozen(kind);
        let newest = versions.last().expect("at least v1");
        assert_eq!(
            newest.fingerprint,
            kind.fingerprint(),
            "schemas/{stem}.avsc changed its fingerprint: if it is compatible, freeze it as \
             schemas/history/{stem}.v{next}.avsc (see schemas/README.md)",
            stem = kind.file_stem(),
            next = newest.version.unwrap_or(0) + 1,
        );
        for pair in versions.windows(2) {
            assert_ne!(
                pair[0].fingerprint, pair[1].fingerprint,
                "{kind:?}: a frozen version repeats"
            );
        }
    }
}

#[test]
fn the_current_schema_can_read_every_frozen_version() {
    for &kind in EventKind::ALL {
        for old in frozen(kind) {
            SchemaCompatibility::can_read(&old.schema, kind.schema())
                .unwrap_or_else(|e| panic!("{kind:?} cannot read v{:?}: {e}", old.version));
        }
    }
}

fn kind_and_frozen_version() -> impl Strategy<Value = (EventKind, &'static SchemaInfo)> {
    let all: Vec<(EventKind, &'static SchemaInfo)> = EventKind::ALL
        .iter()
        .flat_map(|&k| k.frozen_versions().map(move |f| (k, f)))
        .collect();
    proptest::sample::select(all)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// can_read is a static check (and apache-avro's is incomplete); this one runs the data:
    /// anything a frozen version could have written decodes into the current Rust type.
    #[test]
    fn data_written_with_any_frozen_version_decodes(
        (kind, old, value) in kind_and_frozen_version()
            .prop_flat_map(|(k, old)| value_of(&old.schema).prop_map(move |v| (k, old, v)))
    ) {
        let bytes = written_by(&old.schema, old.fingerprint, value);
        let event = decode_any(&bytes).expect("old data decodes");
        prop_assert_eq!(event.kind(), kind);
        prop_assert!(event.encode().is_ok());
    }
}

/// The gate bites: the changes the README forbids are caught, the ones it allows pass.
#[test]
fn incompatible_changes_are_caught_and_compatible_ones_pass() {
    let base: serde_json::Value =
        serde_json::from_str(EventKind::CallEvent.schema_json()).expect("json");
    let fields = |j: &mut serde_json::Value| j["fields"].as_array_mut().expect("fields").clone();
    let edit = |f: &dyn Fn(&mut Vec<serde_json::Value>)| {
        let mut j = base.clone();
        let mut fs = fields(&mut j);
        f(&mut fs);
        j["fields"] = serde_json::Value::Array(fs);
        Schema::parse_str(&j.to_string()).expect("edited schema parses")
    };
    let field_named = |fs: &mut Vec<serde_json::Value>, name: &str| -> usize {
        fs.iter().position(|f| f["name"] == name).expect("field")
    };
    let cases: Vec<(&str, Schema, bool)> = vec![
        (
            "add an optional field with a null default",
            edit(&|fs| {
                fs.push(
                    serde_json::json!({"name": "x", "type": ["null", "string"], "default": null}),
                )
            }),
            true,
        ),
        (
            "add a field with a default",
            edit(&|fs| fs.push(serde_json::json!({"name": "x", "type": "int", "default": 0}))),
            true,
        ),
        (
            "add an enum symbol",
            edit(&|fs| {
                let i = field_named(fs, "source");
                let syms = fs[i]["type"]["symbols"].as_array_mut().expect("symbols");
                syms.insert(0, "replay".into());
            }),
            true,
        ),
        (
            "add a field without a default",
            edit(&|fs| fs.push(serde_json::json!({"name": "x", "type": "string"}))),
            false,
        ),
        (
            "remove an enum symbol",
            edit(&|fs| {
                let i = field_named(fs, "source");
                fs[i]["type"]["symbols"]
                    .as_array_mut()
                    .expect("symbols")
                    .remove(0);
            }),
            false,
        ),
        (
            "change a field's type",
            edit(&|fs| {
                let i = field_named(fs, "call_id");
                fs[i]["type"] = "long".into();
            }),
            false,
        ),
    ];
    let old = EventKind::CallEvent.schema();
    for (name, new, compatible) in cases {
        let result = SchemaCompatibility::can_read(old, &new);
        assert_eq!(result.is_ok(), compatible, "{name}: {result:?}");
    }
}

/// `git show HEAD:./<path>` from this crate's directory; `None` without git, outside a
/// repository, or for a file not committed yet.
fn at_head(path: &str) -> Option<String> {
    let out = Command::new("git")
        .args(["show", &format!("HEAD:./{path}")])
        .current_dir(manifest_dir())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Catches an incompatible edit before it is committed (and before anyone froze it): the
/// working tree's schema must read what HEAD's wrote, and frozen files must be unchanged.
#[test]
fn the_working_tree_can_read_what_head_wrote() {
    let mut compared = 0;
    for &kind in EventKind::ALL {
        let path = format!("{}.avsc", kind.file_stem());
        if let Some(committed) = at_head(&path) {
            compared += 1;
            if committed != kind.schema_json() {
                let head = Schema::parse_str(&committed).expect("HEAD's schema parses");
                SchemaCompatibility::can_read(&head, kind.schema()).unwrap_or_else(|e| {
                    panic!("schemas/{path} cannot read data written with HEAD's version: {e}")
                });
            }
        }
        for old in frozen(kind) {
            let path = format!(
                "history/{}.v{}.avsc",
                kind.file_stem(),
                old.version.unwrap_or(0)
            );
            if let Some(committed) = at_head(&path) {
                assert_eq!(
                    committed, old.json,
                    "schemas/{path} is frozen: never edit it"
                );
            }
        }
    }
    if compared == 0 {
        eprintln!("git or HEAD not available: only the frozen history was checked");
    }
}
