//! The next version of `CallLaunch` as a newer writer in a rolling upgrade has it (one field
//! added, optional with a default), its records framed with the id the registry gave it, and
//! the completion detector of today's build that must read them: shared by the rolling-upgrade
//! and registry-outage tests.

use anyhow::{bail, Result};
use apache_avro::types::Value;
use callstream_completion_detector::DetectorConfig;
use callstream_platform::Topics;
use callstream_schemas::{decode_value, wire, CallLaunch, Event, EventKind};

/// The field the next version adds.
pub const ADDED_FIELD: &str = "carrier_region";

/// Today's `CallLaunch` schema with [`ADDED_FIELD`] appended.
pub fn schema() -> String {
    let mut json: serde_json::Value =
        serde_json::from_str(EventKind::CallLaunch.schema_json()).expect("the schema is JSON");
    json["fields"]
        .as_array_mut()
        .expect("a record has fields")
        .push(serde_json::json!({
            "name": ADDED_FIELD, "type": ["null", "string"], "default": null,
            "doc": "Added by the next version."
        }));
    json.to_string()
}

/// `launch` as the newer writer writes it: the next version's body (with `added` in the new
/// field) behind the Confluent header of schema `id`.
pub fn framed(
    launch: &CallLaunch,
    added: Option<&str>,
    id: u32,
    schema: &apache_avro::Schema,
) -> Result<Vec<u8>> {
    let (_, Value::Record(mut fields)) = decode_value(&launch.encode()?)? else {
        bail!("a launch decodes to a record");
    };
    let value = match added {
        Some(text) => Value::Union(1, Box::new(Value::String(text.into()))),
        None => Value::Union(0, Box::new(Value::Null)),
    };
    fields.push((ADDED_FIELD.into(), value));
    confluent_framed(fields, id, schema)
}

/// A record's `fields` as a writer of schema `id` frames them: the Confluent header, then
/// the body in `schema`.
pub fn confluent_framed(
    fields: Vec<(String, Value)>,
    id: u32,
    schema: &apache_avro::Schema,
) -> Result<Vec<u8>> {
    let mut bytes = vec![wire::CONFLUENT_MAGIC];
    bytes.extend_from_slice(&id.to_be_bytes());
    bytes.extend(apache_avro::to_avro_datum(schema, Value::Record(fields))?);
    Ok(bytes)
}

/// A detector that reports a launch accepted a minute ago at once (3 s window, 0.5 s grace).
pub fn detector_config(topics: &Topics) -> DetectorConfig {
    DetectorConfig {
        topics: topics.clone(),
        default_window_ms: 3_000,
        default_grace_ms: 500,
        bucket_close_delay_ms: 3_500,
        ..DetectorConfig::default()
    }
}
