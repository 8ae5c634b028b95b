//! Test helpers shared by the integration tests: a proptest strategy that generates any Avro
//! value of a given schema, so every event type is exercised with random data without
//! hand-written generators, and data "written with" old schema versions can be produced.

#![allow(dead_code)]

use std::collections::HashMap;

use apache_avro::{schema::Name, types::Value, Schema};
use callstream_schemas::{header, EventKind, Fingerprint};
use proptest::{
    collection::{hash_map, vec},
    prelude::*,
    sample::select,
    strategy::{Union, ValueTree},
    test_runner::TestRunner,
};

/// Milliseconds chrono can represent as a `DateTime<Utc>`: years 1 to 9999.
const MIN_MS: i64 = -62_135_596_800_000;
const MAX_MS: i64 = 253_402_300_799_999;

/// Any value of `schema`.
pub fn value_of(schema: &Schema) -> BoxedStrategy<Value> {
    let mut names = HashMap::new();
    collect_names(schema, &mut names);
    gen(schema, &names)
}

fn collect_names(schema: &Schema, names: &mut HashMap<Name, Schema>) {
    match schema {
        Schema::Record(r) => {
            names.insert(r.name.clone(), schema.clone());
            for f in &r.fields {
                collect_names(&f.schema, names);
            }
        }
        Schema::Enum(e) => {
            names.insert(e.name.clone(), schema.clone());
        }
        Schema::Union(u) => u.variants().iter().for_each(|s| collect_names(s, names)),
        Schema::Array(a) => collect_names(&a.items, names),
        Schema::Map(m) => collect_names(&m.types, names),
        _ => {}
    }
}

fn text() -> BoxedStrategy<String> {
    // Mostly readable ids, sometimes any Unicode, to exercise multi-byte strings.
    prop_oneof![3 => "[a-z0-9_-]{0,10}", 1 => any::<String>()].boxed()
}

fn gen(schema: &Schema, names: &HashMap<Name, Schema>) -> BoxedStrategy<Value> {
    match schema {
        Schema::Null => Just(Value::Null).boxed(),
        Schema::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
        Schema::Int => any::<i32>().prop_map(Value::Int).boxed(),
        Schema::Long => any::<i64>().prop_map(Value::Long).boxed(),
        Schema::Double => (-1e12f64..1e12).prop_map(Value::Double).boxed(),
        Schema::String => text().prop_map(Value::String).boxed(),
        Schema::Uuid => any::<u128>()
            .prop_map(|n| Value::Uuid(uuid::Uuid::from_u128(n)))
            .boxed(),
        Schema::TimestampMillis => (MIN_MS..=MAX_MS).prop_map(Value::TimestampMillis).boxed(),
        Schema::Enum(e) => {
            let symbols: Vec<(u32, String)> = e
                .symbols
                .iter()
                .enumerate()
                .map(|(i, s)| (i as u32, s.clone()))
                .collect();
            select(symbols).prop_map(|(i, s)| Value::Enum(i, s)).boxed()
        }
        Schema::Union(u) => Union::new(u.variants().iter().enumerate().map(|(i, s)| {
            gen(s, names)
                .prop_map(move |v| Value::Union(i as u32, Box::new(v)))
                .boxed()
        }))
        .boxed(),
        Schema::Array(a) => vec(gen(&a.items, names), 0..3)
            .prop_map(Value::Array)
            .boxed(),
        Schema::Map(m) => hash_map(text(), gen(&m.types, names), 0..3)
            .prop_map(Value::Map)
            .boxed(),
        Schema::Record(r) => {
            let field_names: Vec<String> = r.fields.iter().map(|f| f.name.clone()).collect();
            let fields: Vec<BoxedStrategy<Value>> =
                r.fields.iter().map(|f| gen(&f.schema, names)).collect();
            fields
                .prop_map(move |values| {
                    Value::Record(field_names.iter().cloned().zip(values).collect())
                })
                .boxed()
        }
        Schema::Ref { name } => gen(&names[name], names),
        other => panic!("the generator does not cover {other:?}; extend it"),
    }
}

/// Any value of `kind`'s current schema.
pub fn value_of_kind() -> impl Strategy<Value = (EventKind, Value)> {
    select(EventKind::ALL.to_vec())
        .prop_flat_map(|kind| value_of(kind.schema()).prop_map(move |v| (kind, v)))
}

/// Single-object bytes of `value` written by apache-avro's generic writer with `schema`,
/// under `fingerprint`: bytes as another producer would write them.
pub fn written_by(schema: &Schema, fingerprint: Fingerprint, value: Value) -> Vec<u8> {
    let body = apache_avro::to_avro_datum(schema, value).expect("generated values fit");
    let mut bytes = header(fingerprint).to_vec();
    bytes.extend_from_slice(&body);
    bytes
}

/// A deterministic sample value of `kind`'s current schema.
pub fn sample(kind: EventKind) -> Value {
    let mut runner = TestRunner::deterministic();
    value_of(kind.schema())
        .new_tree(&mut runner)
        .expect("strategy builds")
        .current()
}
