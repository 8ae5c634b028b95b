//! The reader's primitives, on hand-written bytes.

use super::*;

fn read_one<'a>(schema: &'static Schema, bytes: &'a [u8]) -> Option<Val<'a>> {
    let mut reader = Reader { rest: bytes };
    let value = reader.value(schema, 1)?;
    reader.rest.is_empty().then_some(value)
}

fn leak(schema: Schema) -> &'static Schema {
    Box::leak(Box::new(schema))
}

#[test]
fn primitives_read_as_avro_writes_them() {
    assert_eq!(read_one(leak(Schema::Long), &[0x03]), Some(Val::Long(-2)));
    assert_eq!(read_one(leak(Schema::Boolean), &[1]), Some(Val::Bool(true)));
    assert_eq!(read_one(leak(Schema::Boolean), &[2]), None);
    assert_eq!(
        read_one(leak(Schema::String), &[4, b'h', b'i']),
        Some(Val::Str("hi"))
    );
    assert_eq!(read_one(leak(Schema::String), &[4, 0xff, 0xfe]), None);
    assert_eq!(read_one(leak(Schema::String), &[6, b'h']), None);
    // An int beyond 32 bits is refused, as a long it reads.
    let big = [0x80, 0x80, 0x80, 0x80, 0x10];
    assert_eq!(read_one(leak(Schema::Int), &big), None);
    assert!(read_one(leak(Schema::Long), &big).is_some());
    // More than ten varint bytes.
    assert_eq!(read_one(leak(Schema::Long), &[0xff; 11]), None);
}

#[test]
fn uuids_are_their_text_or_sixteen_raw_bytes() {
    let id = Uuid::from_u128(0x1234);
    let text = id.hyphenated().to_string();
    let mut bytes = vec![(text.len() as u8) * 2];
    bytes.extend_from_slice(text.as_bytes());
    assert_eq!(read_one(leak(Schema::Uuid), &bytes), Some(Val::Uuid(id)));
    let mut raw = vec![32];
    raw.extend_from_slice(id.as_bytes());
    assert_eq!(read_one(leak(Schema::Uuid), &raw), Some(Val::Uuid(id)));
    assert_eq!(read_one(leak(Schema::Uuid), &[6, b'a', b'b', b'c']), None);
}

#[test]
fn unions_and_enums_check_their_index() {
    let union = leak(Schema::parse_str(r#"["null", "string"]"#).expect("schema"));
    assert_eq!(read_one(union, &[0]), Some(Val::Null));
    assert_eq!(read_one(union, &[2, 2, b'x']), Some(Val::Str("x")));
    assert_eq!(read_one(union, &[4]), None);
    let symbols = r#"{"type": "enum", "name": "E", "symbols": ["a", "b"]}"#;
    let enumeration = leak(Schema::parse_str(symbols).expect("schema"));
    assert_eq!(read_one(enumeration, &[2]), Some(Val::Symbol("b")));
    assert_eq!(read_one(enumeration, &[4]), None);
}

#[test]
fn other_fingerprints_and_trailing_bytes_take_the_full_decoder() {
    let layout = Layout::new(EventKind::CallLaunch, &["tenant_id"]).expect("layout");
    assert!(layout.read::<1>(b"not avro").is_none());
    let launch = crate::testkit::accepted_launch("t", "c", Uuid::nil(), "CA", 0);
    let mut bytes = callstream_schemas::Event::encode(&launch).expect("encodes");
    assert_eq!(layout.read::<1>(&bytes), Some([Val::Str("t")]));
    bytes.push(0);
    assert!(layout.read::<1>(&bytes).is_none());
    assert!(Layout::new(EventKind::CallLaunch, &["no_such_field"]).is_none());
}
