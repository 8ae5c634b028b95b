//! Which framing records carry on the topics, and what the Confluent wire format's schema ids
//! mean to this process.
//!
//! Two framings, both always read:
//! - Avro single-object encoding (`0xC3 0x01` + 8-byte fingerprint + body): the default, for
//!   setups without a schema registry.
//! - The Confluent wire format (`0x00` + 4-byte big-endian schema id + body), which
//!   Confluent's and Apicurio's deserializers, Kafka Connect converters, ksqlDB and Flink SQL
//!   read with the writer's schema fetched from a registry by id. A process writes it once
//!   [`use_confluent_ids`] installed the ids its schemas were registered under (at start, by
//!   `callstream-registry`); from then on every [`Event::encode`](crate::Event::encode) frames
//!   that way, with no registry call on the hot path.
//!
//! Reading the Confluent framing maps the id to the writer schema's fingerprint, and from there
//! on decoding is the single-object path: the current schema decodes directly, a frozen older
//! one resolves into the current type. An id whose schema this build does not have (a newer
//! writer's, with a field added) is [`learn`]ed from the registry's answer once and resolved
//! through Avro schema resolution; until then decoding it fails with
//! [`DecodeError::UnknownSchemaId`](crate::DecodeError::UnknownSchemaId), which a consumer
//! answers by fetching the schema (see [`schema_id`]), not by dead-lettering the record.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use crate::registry::{SchemaInfo, REGISTRY};
use crate::{EventKind, Fingerprint};

/// The first byte of the Confluent wire format.
pub const CONFLUENT_MAGIC: u8 = 0;
/// Its marker and schema id.
pub const CONFLUENT_HEADER_LEN: usize = 5;

/// The framing this process writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Avro single-object encoding (no registry).
    SingleObject,
    /// The Confluent wire format, with ids from a schema registry.
    Confluent,
}

/// The Confluent ids of this build's current schemas, per event kind, once installed.
static WRITE_IDS: OnceLock<Vec<Option<u32>>> = OnceLock::new();

/// What the process knows of schema ids: the writer fingerprint of each, and the writer
/// schemas this build was not compiled with.
#[derive(Default)]
struct Learned {
    fingerprints: HashMap<u32, Fingerprint>,
    /// Leaked on purpose: a handful per process (one per distinct newer schema), read by
    /// every decode of such a record without a lock held.
    writers: HashMap<Fingerprint, &'static SchemaInfo>,
}

static LEARNED: LazyLock<RwLock<Learned>> = LazyLock::new(RwLock::default);

/// Why a schema from a registry cannot be used to read records.
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    /// The text is not an Avro schema.
    #[error("schema id {id} is not a valid Avro schema: {detail}")]
    Invalid { id: u32, detail: String },
    /// A valid schema, but not of a callstream event type.
    #[error("schema id {id} is a {name}, not a callstream event")]
    NotOurs { id: u32, name: String },
    /// A schema of one of our types that this build's schema cannot read (an incompatible
    /// change, which the registry's BACKWARD compatibility should have refused).
    #[error("schema id {id} ({name}) cannot be read with this build's schema: {detail}")]
    Incompatible {
        id: u32,
        name: String,
        detail: String,
    },
}

/// From now on, every event of a kind in `ids` is written in the Confluent wire format with
/// that id (kinds not in `ids` stay single-object). Once per process: a second call is
/// ignored and returns `false`. The ids are also known for reading.
pub fn use_confluent_ids(ids: &[(EventKind, u32)]) -> bool {
    let mut table = vec![None; EventKind::ALL.len()];
    {
        let mut learned = LEARNED.write().unwrap_or_else(|e| e.into_inner());
        for &(kind, id) in ids {
            table[kind as usize] = Some(id);
            learned.fingerprints.insert(id, kind.fingerprint());
        }
    }
    WRITE_IDS.set(table).is_ok()
}

/// The framing this process writes.
pub fn framing() -> Framing {
    match WRITE_IDS.get() {
        Some(_) => Framing::Confluent,
        None => Framing::SingleObject,
    }
}

/// Writes the header of a record of `kind` in this process's framing.
pub(crate) fn write_header(kind: EventKind, out: &mut Vec<u8>) {
    match WRITE_IDS.get().and_then(|ids| ids[kind as usize]) {
        Some(id) => {
            out.push(CONFLUENT_MAGIC);
            out.extend_from_slice(&id.to_be_bytes());
        }
        None => out.extend_from_slice(&crate::header(kind.fingerprint())),
    }
}

/// The schema id of Confluent-framed bytes; `None` for anything else.
pub fn schema_id(bytes: &[u8]) -> Option<u32> {
    match bytes {
        [CONFLUENT_MAGIC, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

/// Whether records with schema `id` can be decoded now (without [`learn`]ing it first).
pub fn knows_id(id: u32) -> bool {
    fingerprint_of_id(id).is_some()
}

/// The writer fingerprint of schema `id`, if learned.
pub(crate) fn fingerprint_of_id(id: u32) -> Option<Fingerprint> {
    // The ids this process registered, read without a lock: nearly every record it reads
    // was written by a process of the same build.
    if let Some(ids) = WRITE_IDS.get() {
        if let Some(kind) = ids.iter().position(|known| *known == Some(id)) {
            return Some(EventKind::ALL[kind].fingerprint());
        }
    }
    LEARNED
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .fingerprints
        .get(&id)
        .copied()
}

/// A writer schema this build was not compiled with, learned from a registry.
pub(crate) fn learned_writer(fingerprint: Fingerprint) -> Option<&'static SchemaInfo> {
    LEARNED
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .writers
        .get(&fingerprint)
        .copied()
}

/// Takes `schema` (the registry's text for `id`) as the writer schema of records framed with
/// `id`, and says which event type it is. Checks that this build's schema of that type can
/// read it, so a record that would fail resolution fails here, once, with the reason.
pub fn learn(id: u32, schema: &str) -> Result<EventKind, LearnError> {
    let fingerprint = crate::fingerprint_of(schema).map_err(|e| LearnError::Invalid {
        id,
        detail: e.to_string(),
    })?;
    if let Some((kind, _)) = REGISTRY.writer(fingerprint) {
        remember(id, fingerprint, None);
        return Ok(kind);
    }
    let parsed = apache_avro::Schema::parse_str(schema).map_err(|e| LearnError::Invalid {
        id,
        detail: e.to_string(),
    })?;
    let name = match &parsed {
        apache_avro::Schema::Record(r) => r.name.fullname(None),
        _ => {
            return Err(LearnError::NotOurs {
                id,
                name: "non-record schema".into(),
            })
        }
    };
    let kind = EventKind::from_name(&name).ok_or_else(|| LearnError::NotOurs {
        id,
        name: name.clone(),
    })?;
    apache_avro::schema_compatibility::SchemaCompatibility::can_read(&parsed, kind.schema())
        .map_err(|e| LearnError::Incompatible {
            id,
            name: name.clone(),
            detail: e.to_string(),
        })?;
    let info = SchemaInfo::from_registry(kind, schema)
        .map_err(|detail| LearnError::Invalid { id, detail })?;
    remember(id, fingerprint, Some(Box::leak(Box::new(info))));
    Ok(kind)
}

fn remember(id: u32, fingerprint: Fingerprint, writer: Option<&'static SchemaInfo>) {
    let mut learned = LEARNED.write().unwrap_or_else(|e| e.into_inner());
    learned.fingerprints.insert(id, fingerprint);
    if let Some(writer) = writer {
        learned.writers.entry(fingerprint).or_insert(writer);
    }
}

/// Where a process fetches the schema of an id it does not know: the registry's text, or why
/// not (`transient`: it did not answer; try again later).
pub type Resolver = Box<dyn Fn(u32) -> Result<String, ResolveFailure> + Send + Sync>;

/// Why a [`Resolver`] could not give a schema.
#[derive(Debug, Clone)]
pub struct ResolveFailure {
    pub detail: String,
    /// Whether asking again later may succeed (the registry did not answer).
    pub transient: bool,
}

static RESOLVER: OnceLock<Resolver> = OnceLock::new();

/// When each id last failed to resolve: a record stream of an id the registry cannot give
/// asks again at most this often, not once per record.
static FAILED: LazyLock<Mutex<HashMap<u32, (Instant, bool)>>> = LazyLock::new(Mutex::default);
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// Installs the process's resolver (once): from then on decoding bytes of an unknown id
/// fetches its schema and learns it, so every reader of the process (the runtime's
/// processors, the projections, a tally) reads a newer writer's records.
pub fn set_resolver(resolver: Resolver) -> bool {
    RESOLVER.set(resolver).is_ok()
}

/// Whether a resolver is installed.
pub fn has_resolver() -> bool {
    RESOLVER.get().is_some()
}

/// What [`resolve`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Decoding can go on.
    Known,
    /// The registry did not answer (or no resolver is installed and none could): hold the
    /// record and ask again later.
    Unavailable,
    /// The registry has no usable schema for it: decoding will fail and say why.
    Unusable,
}

/// Learns schema `id` through the installed resolver unless known already. Blocks for the
/// registry's answer (once per new id; a failure is not asked again for 2 s).
pub fn resolve(id: u32) -> Resolution {
    if knows_id(id) {
        return Resolution::Known;
    }
    let Some(resolver) = RESOLVER.get() else {
        return Resolution::Unusable;
    };
    let recently = FAILED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
        .copied();
    if let Some((at, transient)) = recently {
        if at.elapsed() < RETRY_AFTER {
            return if transient {
                Resolution::Unavailable
            } else {
                Resolution::Unusable
            };
        }
    }
    let failed = |transient: bool| {
        FAILED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, (Instant::now(), transient));
    };
    match resolver(id) {
        Ok(text) => match learn(id, &text) {
            Ok(_) => Resolution::Known,
            Err(_) => {
                failed(false);
                Resolution::Unusable
            }
        },
        Err(failure) => {
            failed(failure.transient);
            if failure.transient {
                Resolution::Unavailable
            } else {
                Resolution::Unusable
            }
        }
    }
}
