//! Schema fingerprints as the Avro specification defines them: the CRC-64-AVRO (Rabin)
//! fingerprint of the schema's Parsing Canonical Form.
//!
//! Why not `apache_avro::Schema::fingerprint::<Rabin>()`: apache-avro 0.21 keeps logical-typed
//! primitives as `{"type":"string"}` in its canonical form where the specification (and the
//! Java implementation) reduce them to `"string"` (AVRO-4004, still open). Every schema here
//! has a `uuid` and a `timestamp-millis` field, so its fingerprints would differ from the ones
//! Java's `BinaryMessageDecoder` and other spec-following readers compute. This module follows
//! the specification; the registry also accepts apache-avro's variant on input, so bytes from
//! a Rust producer using apache-avro's default single-object writer decode too.

use std::{collections::HashSet, fmt};

use serde_json::Value as Json;

/// An 8-byte CRC-64-AVRO schema fingerprint, as it appears in a single-object header
/// (little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub [u8; 8]);

impl Fingerprint {
    /// The fingerprint as a number (the spec's 64-bit value; Java's `long`, unsigned here).
    pub fn as_u64(self) -> u64 {
        u64::from_le_bytes(self.0)
    }

    /// Parses the header form written by [`fmt::Display`]: 16 lowercase hex digits of
    /// [`Fingerprint::as_u64`].
    pub fn parse_hex(text: &str) -> Option<Self> {
        if text.len() != 16 {
            return None;
        }
        u64::from_str_radix(text, 16)
            .ok()
            .map(|n| Self(n.to_le_bytes()))
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.as_u64())
    }
}

/// CRC-64-AVRO, the algorithm given in the specification ("Schema Fingerprints").
pub fn rabin(data: &[u8]) -> Fingerprint {
    const EMPTY: u64 = 0xc15d_213a_a4d7_a795;
    // Build the table once; 256 iterations of 8 shifts is cheap next to any use.
    static TABLE: std::sync::LazyLock<[u64; 256]> = std::sync::LazyLock::new(|| {
        let mut table = [0u64; 256];
        for (i, slot) in table.iter_mut().enumerate() {
            let mut fp = i as u64;
            for _ in 0..8 {
                fp = (fp >> 1) ^ (EMPTY & 0u64.wrapping_sub(fp & 1));
            }
            *slot = fp;
        }
        table
    });
    let mut fp = EMPTY;
    for &b in data {
        fp = (fp >> 8) ^ TABLE[((fp ^ u64::from(b)) & 0xff) as usize];
    }
    Fingerprint(fp.to_le_bytes())
}

/// Why a schema text has no canonical form (it is not a valid schema).
#[derive(Debug, thiserror::Error)]
pub enum CanonicalFormError {
    #[error("schema is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("schema element has no usable \"type\": {0}")]
    NoType(String),
    #[error("named type without a \"name\": {0}")]
    NoName(String),
    #[error("{0} is missing or malformed")]
    Malformed(&'static str),
}

const PRIMITIVES: &[&str] = &[
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
];

/// The Parsing Canonical Form of a schema given as JSON text.
pub fn canonical_form(schema_json: &str) -> Result<String, CanonicalFormError> {
    let json: Json = serde_json::from_str(schema_json)?;
    let mut out = String::new();
    write_pcf(&mut out, &json, None, &mut HashSet::new())?;
    Ok(out)
}

/// The spec fingerprint of a schema given as JSON text.
pub fn fingerprint_of(schema_json: &str) -> Result<Fingerprint, CanonicalFormError> {
    canonical_form(schema_json).map(|pcf| rabin(pcf.as_bytes()))
}

fn full_name(name: &str, namespace: Option<&str>) -> String {
    match namespace {
        _ if name.contains('.') => name.to_owned(),
        Some(ns) if !ns.is_empty() => format!("{ns}.{name}"),
        _ => name.to_owned(),
    }
}

fn quoted(out: &mut String, s: &str) {
    // Names and symbols are restricted to [A-Za-z0-9_.], so no escaping is ever needed
    // ([STRINGS] rule); Java writes them the same way.
    out.push('"');
    out.push_str(s);
    out.push('"');
}

fn write_pcf(
    out: &mut String,
    json: &Json,
    namespace: Option<&str>,
    seen: &mut HashSet<String>,
) -> Result<(), CanonicalFormError> {
    match json {
        Json::String(s) if PRIMITIVES.contains(&s.as_str()) => quoted(out, s),
        Json::String(reference) => quoted(out, &full_name(reference, namespace)),
        Json::Array(branches) => {
            out.push('[');
            for (i, branch) in branches.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_pcf(out, branch, namespace, seen)?;
            }
            out.push(']');
        }
        Json::Object(obj) => match obj.get("type") {
            // [PRIMITIVES]: a primitive with attributes (a logical type) is just the primitive.
            Some(Json::String(t)) if PRIMITIVES.contains(&t.as_str()) => quoted(out, t),
            Some(Json::String(t))
                if matches!(t.as_str(), "record" | "error" | "enum" | "fixed") =>
            {
                let name = obj
                    .get("name")
                    .and_then(Json::as_str)
                    .ok_or_else(|| CanonicalFormError::NoName(json.to_string()))?;
                let own_ns = obj.get("namespace").and_then(Json::as_str).or(namespace);
                let full = full_name(name, own_ns);
                if !seen.insert(full.clone()) {
                    quoted(out, &full);
                    return Ok(());
                }
                let inner_ns = full.rsplit_once('.').map(|(ns, _)| ns.to_owned());
                out.push_str("{\"name\":");
                quoted(out, &full);
                out.push_str(",\"type\":");
                quoted(out, t);
                match t.as_str() {
                    "enum" => {
                        out.push_str(",\"symbols\":[");
                        let symbols = obj
                            .get("symbols")
                            .and_then(Json::as_array)
                            .ok_or(CanonicalFormError::Malformed("enum symbols"))?;
                        for (i, sym) in symbols.iter().enumerate() {
                            if i > 0 {
                                out.push(',');
                            }
                            let sym = sym
                                .as_str()
                                .ok_or(CanonicalFormError::Malformed("enum symbol"))?;
                            quoted(out, sym);
                        }
                        out.push(']');
                    }
                    "fixed" => {
                        // [INTEGERS]: sizes without quotes or leading zeros.
                        let size = match obj.get("size") {
                            Some(Json::Number(n)) => n.as_u64(),
                            Some(Json::String(s)) => s.parse().ok(),
                            _ => None,
                        }
                        .ok_or(CanonicalFormError::Malformed("fixed size"))?;
                        out.push_str(&format!(",\"size\":{size}"));
                    }
                    _ => {
                        out.push_str(",\"fields\":[");
                        let fields = obj
                            .get("fields")
                            .and_then(Json::as_array)
                            .ok_or(CanonicalFormError::Malformed("record fields"))?;
                        for (i, field) in fields.iter().enumerate() {
                            if i > 0 {
                                out.push(',');
                            }
                            let fname = field
                                .get("name")
                                .and_then(Json::as_str)
                                .ok_or(CanonicalFormError::Malformed("field name"))?;
                            let ftype = field
                                .get("type")
                                .ok_or(CanonicalFormError::Malformed("field type"))?;
                            out.push_str("{\"name\":");
                            quoted(out, fname);
                            out.push_str(",\"type\":");
                            write_pcf(out, ftype, inner_ns.as_deref(), seen)?;
                            out.push('}');
                        }
                        out.push(']');
                    }
                }
                out.push('}');
            }
            Some(Json::String(t)) if t == "array" || t == "map" => {
                let key = if t == "array" { "items" } else { "values" };
                out.push_str("{\"type\":");
                quoted(out, t);
                out.push_str(&format!(",\"{key}\":"));
                let inner = obj
                    .get(key)
                    .ok_or(CanonicalFormError::Malformed("array items or map values"))?;
                write_pcf(out, inner, namespace, seen)?;
                out.push('}');
            }
            // `{"type": "SomeName"}` is a reference to a named type.
            Some(Json::String(reference)) => quoted(out, &full_name(reference, namespace)),
            Some(inner @ (Json::Object(_) | Json::Array(_))) => {
                write_pcf(out, inner, namespace, seen)?
            }
            _ => return Err(CanonicalFormError::NoType(json.to_string())),
        },
        other => return Err(CanonicalFormError::NoType(other.to_string())),
    }
    Ok(())
}
