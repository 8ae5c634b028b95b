//! The direct route is taken (not only fallen back from) for every event type, and agrees
//! with the Value route; the random-value comparison is in `tests/roundtrip.rs`. The examples
//! here serve the encoder's tests too.

use apache_avro::{to_avro_datum, types::Value, Schema};

use crate::{codec::decode_direct, header, registry::REGISTRY, EventKind};

/// A value of `schema`: `full`, every optional field set, two items in every array and map,
/// and the last symbol of every enum; otherwise every union null, arrays and maps empty, the
/// first symbols. Between them each branch of the decoder and the encoder is used.
pub(crate) fn example(schema: &Schema, names: &crate::scan::Names, full: bool) -> Value {
    match schema {
        Schema::Ref { name } => example(&names[name], names, full),
        Schema::Null => Value::Null,
        Schema::Boolean => Value::Boolean(full),
        Schema::Int => Value::Int(if full { -7 } else { 0 }),
        Schema::Long => Value::Long(if full { 1 << 40 } else { 0 }),
        Schema::TimestampMillis => Value::TimestampMillis(if full { 1_700_000_000_123 } else { 0 }),
        Schema::Double => Value::Double(if full { 1.5 } else { 0.0 }),
        Schema::String => Value::String(if full { "text é" } else { "" }.into()),
        Schema::Uuid => Value::Uuid(uuid::Uuid::from_u128(if full { 0xABCD_EF01 } else { 0 })),
        Schema::Enum(e) => {
            let i = if full { e.symbols.len() - 1 } else { 0 };
            Value::Enum(i as u32, e.symbols[i].clone())
        }
        Schema::Union(u) => {
            let (i, branch) = u
                .variants()
                .iter()
                .enumerate()
                .find(|(_, s)| matches!(s, Schema::Null) != full)
                .expect("a branch");
            Value::Union(i as u32, Box::new(example(branch, names, full)))
        }
        Schema::Array(a) => Value::Array(if full {
            vec![example(&a.items, names, full); 2]
        } else {
            vec![]
        }),
        Schema::Map(m) => Value::Map(if full {
            ["b", "a"]
                .into_iter()
                .map(|k| (k.to_owned(), example(&m.types, names, full)))
                .collect()
        } else {
            Default::default()
        }),
        Schema::Record(r) => Value::Record(
            r.fields
                .iter()
                .map(|f| (f.name.clone(), example(&f.schema, names, full)))
                .collect(),
        ),
        other => panic!("no .avsc uses {other:?}"),
    }
}

/// Bytes of `kind` holding its `example`.
pub(crate) fn example_bytes(kind: EventKind, full: bool) -> Vec<u8> {
    let info = kind.info();
    let mut bytes = header(info.fingerprint).to_vec();
    bytes.extend(
        to_avro_datum(&info.schema, example(&info.schema, &info.names, full)).expect("writes"),
    );
    bytes
}

#[test]
fn every_type_decodes_directly_and_as_the_value_route_does() {
    for &kind in EventKind::ALL {
        for full in [true, false] {
            let bytes = example_bytes(kind, full);
            let direct = crate::registry::any_direct(&bytes, kind)
                .unwrap_or_else(|| panic!("{kind:?} fell back to the Value route"));
            let (_, value) = crate::decode_value(&bytes).expect("decodes");
            let via_value = crate::registry::any_from_value(kind, &value).expect("maps");
            assert_eq!(direct, via_value, "{kind:?}");
            assert_eq!(
                crate::decode_any(&bytes).expect("decodes"),
                via_value,
                "{kind:?}"
            );
            // Cut short, or asked as another type: not for the direct route.
            assert!(crate::registry::any_direct(&bytes[..bytes.len() - 1], kind).is_none());
            let other = if kind == EventKind::Alert {
                EventKind::AuditEvent
            } else {
                EventKind::Alert
            };
            assert!(decode_direct::<crate::types::Alert>(&REGISTRY, &bytes, other).is_none());
        }
    }
}
