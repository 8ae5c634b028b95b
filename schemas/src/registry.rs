//! Every schema this build knows, parsed once: the current `.avsc` of each event type and every
//! frozen version in `history/`, indexed by fingerprint.
//!
//! Guarantees: the `.avsc` files are the single source of truth (embedded with `include_str!`);
//! a fingerprint maps to exactly one writer schema; data written with a frozen older version
//! is resolved into the current type, so views can be rebuilt from offset 0 after a schema
//! evolved.

use std::{collections::HashMap, sync::LazyLock};

use apache_avro::{rabin::Rabin, GenericSingleObjectReader, Schema};

use crate::{
    fingerprint::{canonical_form, rabin},
    types::*,
    Fingerprint,
};

/// One frozen file of `history/`, embedded by the build script.
pub(crate) struct FrozenFile {
    pub(crate) stem: &'static str,
    pub(crate) version: u32,
    pub(crate) json: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/frozen.rs"));

/// Lists every event type once: its `EventKind` variant and Rust type share a name; the string
/// is the `.avsc` file stem.
macro_rules! event_types {
    ($($ty:ident => $stem:literal,)+) => {
        /// The event types, one per `.avsc` file.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $($ty,)+
        }

        impl EventKind {
            /// Every event type.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$ty,)+];

            /// File stem of the schema: `schemas/<stem>.avsc`, `schemas/history/<stem>.v<N>.avsc`.
            pub fn file_stem(self) -> &'static str {
                match self {
                    $(EventKind::$ty => $stem,)+
                }
            }

            /// The current schema text, as in the `.avsc` file.
            pub fn schema_json(self) -> &'static str {
                match self {
                    $(EventKind::$ty => include_str!(concat!("../", $stem, ".avsc")),)+
                }
            }
        }

        /// Any event, as returned by [`decode_any`](crate::decode_any).
        // A control change (two whole values) is the largest; an `AnyEvent` lives for one
        // record's decode, so boxing every variant would cost an allocation per record to
        // save a few hundred bytes of stack.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum AnyEvent {
            $($ty($ty),)+
        }

        impl AnyEvent {
            /// The event's type.
            pub fn kind(&self) -> EventKind {
                match self {
                    $(AnyEvent::$ty(_) => EventKind::$ty,)+
                }
            }

            /// Encodes the event (single-object encoding).
            pub fn encode(&self) -> Result<Vec<u8>, crate::EncodeError> {
                match self {
                    $(AnyEvent::$ty(e) => crate::Event::encode(e),)+
                }
            }

            /// The Kafka headers for the event, as [`Event::kafka_headers`](crate::Event::kafka_headers).
            pub fn kafka_headers(&self) -> Vec<(&'static str, String)> {
                crate::headers::event_headers(self.kind(), &self.envelope())
            }

            /// The envelope fields every event has.
            pub fn envelope(&self) -> crate::Envelope<'_> {
                match self {
                    $(AnyEvent::$ty(e) => crate::Event::envelope(e),)+
                }
            }
        }

        $(
            impl crate::Event for $ty {
                const KIND: EventKind = EventKind::$ty;

                fn envelope(&self) -> crate::Envelope<'_> {
                    crate::Envelope {
                        event_id: self.event_id,
                        tenant_id: &self.tenant_id,
                        occurred_at: self.occurred_at,
                        causation_id: self.causation_id,
                        correlation_id: self.correlation_id,
                    }
                }

                fn into_any(self) -> AnyEvent {
                    AnyEvent::$ty(self)
                }
            }

            impl From<$ty> for AnyEvent {
                fn from(event: $ty) -> Self {
                    AnyEvent::$ty(event)
                }
            }

            /// Decodes single-object bytes ([`Event::decode`](crate::Event::decode)), so
            /// code generic over "a value from bytes" (the runtime's test driver) reads
            /// events typed.
            impl TryFrom<&[u8]> for $ty {
                type Error = crate::DecodeError;

                fn try_from(bytes: &[u8]) -> Result<Self, Self::Error> {
                    crate::Event::decode(bytes)
                }
            }
        )+

        /// Bytes of `kind` decoded the fast way (see `crate::codec::decode_direct`).
        pub(crate) fn any_direct(bytes: &[u8], kind: EventKind) -> Option<AnyEvent> {
            Some(match kind {
                $(EventKind::$ty => {
                    AnyEvent::$ty(crate::codec::decode_direct(&REGISTRY, bytes, kind)?)
                })+
            })
        }

        pub(crate) fn any_from_value(
            kind: EventKind,
            value: &apache_avro::types::Value,
        ) -> Result<AnyEvent, apache_avro::Error> {
            Ok(match kind {
                $(EventKind::$ty => AnyEvent::$ty(apache_avro::from_value(value)?),)+
            })
        }
    };
}

event_types! {
    CallEvent => "call_event",
    ContactCommand => "contact_command",
    ScheduleRequest => "schedule_request",
    ScheduleEvent => "schedule_event",
    LaunchCommand => "launch_command",
    CallLaunch => "call_launch",
    CompletionMissing => "completion_missing",
    CompletionResolved => "completion_resolved",
    CrmCommand => "crm_command",
    CrmResult => "crm_result",
    ExceptionEvent => "exception",
    ControlChange => "control_change",
    Alert => "alert",
    AuditEvent => "audit_event",
    ContactState => "contact_state",
    Notification => "notification",
}

impl EventKind {
    /// Full Avro name of the record, for example `io.callstream.events.CallEvent`: the value
    /// of the `event-type` Kafka header.
    pub fn name(self) -> &'static str {
        &REGISTRY.current[self as usize].name
    }

    /// The event type whose full name is `name` (an `event-type` header value).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// The current schema.
    pub fn schema(self) -> &'static Schema {
        &REGISTRY.current[self as usize].schema
    }

    /// The current schema's fingerprint (as written in the single-object header).
    pub fn fingerprint(self) -> Fingerprint {
        REGISTRY.current[self as usize].fingerprint
    }

    /// The current schema with its name, canonical form and fingerprints.
    pub fn info(self) -> &'static SchemaInfo {
        &REGISTRY.current[self as usize]
    }

    /// The frozen (released) versions of this schema, oldest first.
    pub fn frozen_versions(self) -> impl Iterator<Item = &'static SchemaInfo> {
        REGISTRY.frozen.iter().filter(move |f| f.kind == self)
    }
}

/// A parsed schema and what identifies it.
#[derive(Debug)]
pub struct SchemaInfo {
    /// The event type the schema describes.
    pub kind: EventKind,
    /// The frozen version number; `None` for the current file.
    pub version: Option<u32>,
    /// Full record name.
    pub name: String,
    /// The schema text.
    pub json: &'static str,
    /// The parsed schema.
    pub schema: Schema,
    /// Its named types, for the pre-decode scan.
    pub(crate) names: crate::scan::Names,
    /// apache-avro's decoder with the schema's names resolved once (`from_avro_datum` resolves
    /// them on every call).
    pub(crate) reader: Resolved,
    /// Parsing Canonical Form, as the specification defines it.
    pub canonical_form: String,
    /// CRC-64-AVRO of `canonical_form`: what this crate writes in headers.
    pub fingerprint: Fingerprint,
    /// What `apache_avro::Schema::fingerprint::<Rabin>()` computes (differs while AVRO-4004 is
    /// open); accepted on input.
    pub apache_avro_fingerprint: Fingerprint,
}

impl SchemaInfo {
    fn parse(kind: EventKind, version: Option<u32>, json: &'static str) -> Self {
        // The schemas are compiled in, not input: a broken file fails every test of this crate
        // at once, so a panic with the file's name is the clearest report.
        Self::try_parse(kind, version, json).unwrap_or_else(|e| {
            let file = match version {
                Some(v) => format!("schemas/history/{}.v{v}.avsc", kind.file_stem()),
                None => format!("schemas/{}.avsc", kind.file_stem()),
            };
            panic!("{file}: {e}")
        })
    }

    /// A writer schema from a schema registry (see [`crate::wire::learn`]); its text is kept
    /// for the process's life.
    pub(crate) fn from_registry(kind: EventKind, json: &str) -> Result<Self, String> {
        Self::try_parse(kind, None, Box::leak(json.to_owned().into_boxed_str()))
    }

    fn try_parse(
        kind: EventKind,
        version: Option<u32>,
        json: &'static str,
    ) -> Result<Self, String> {
        let schema =
            Schema::parse_str(json).map_err(|e| format!("not a valid Avro schema: {e}"))?;
        let canonical_form = canonical_form(json).map_err(|e| format!("no canonical form: {e}"))?;
        let name = match &schema {
            Schema::Record(r) => r.name.fullname(None),
            _ => return Err("not a record schema".into()),
        };
        let avro_fp = schema.fingerprint::<Rabin>();
        let mut apache_avro_fingerprint = [0u8; 8];
        apache_avro_fingerprint.copy_from_slice(&avro_fp.bytes[..8]);
        let fingerprint = rabin(canonical_form.as_bytes());
        let reader = GenericSingleObjectReader::new_with_header_builder(
            schema.clone(),
            HeaderOf(fingerprint),
        )
        .map_err(|e| format!("does not resolve: {e}"))?;
        Ok(Self {
            kind,
            version,
            name,
            json,
            fingerprint,
            reader: Resolved(reader),
            canonical_form,
            names: crate::scan::names_of(&schema),
            schema,
            apache_avro_fingerprint: Fingerprint(apache_avro_fingerprint),
        })
    }
}

/// A schema's single-object reader, expecting this crate's header.
pub(crate) struct Resolved(pub(crate) GenericSingleObjectReader);

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GenericSingleObjectReader")
    }
}

struct HeaderOf(Fingerprint);

impl apache_avro::headers::HeaderBuilder for HeaderOf {
    fn build_header(&self) -> Vec<u8> {
        crate::header(self.0).to_vec()
    }
}

/// Which schema wrote the bytes that carry a fingerprint.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Writer {
    /// The current schema of the kind: no resolution needed.
    Current(EventKind),
    /// A frozen older version (index into `frozen`): resolve into the current schema.
    Frozen(usize),
    /// A schema this build was not compiled with, learned from a schema registry
    /// ([`crate::wire::learn`]): resolve into the current schema.
    Learned(&'static SchemaInfo),
}

pub(crate) struct Registry {
    pub(crate) current: Vec<SchemaInfo>,
    pub(crate) frozen: Vec<SchemaInfo>,
    by_fingerprint: HashMap<Fingerprint, Writer>,
}

impl Registry {
    pub(crate) fn writer(&self, fingerprint: Fingerprint) -> Option<(EventKind, Writer)> {
        let writer = match self.by_fingerprint.get(&fingerprint) {
            Some(writer) => *writer,
            None => Writer::Learned(crate::wire::learned_writer(fingerprint)?),
        };
        let kind = match writer {
            Writer::Current(kind) => kind,
            Writer::Frozen(i) => self.frozen[i].kind,
            Writer::Learned(info) => info.kind,
        };
        Some((kind, writer))
    }

    pub(crate) fn writer_schema(&self, writer: Writer) -> &SchemaInfo {
        match writer {
            Writer::Current(kind) => &self.current[kind as usize],
            Writer::Frozen(i) => &self.frozen[i],
            Writer::Learned(info) => info,
        }
    }
}

pub(crate) static REGISTRY: LazyLock<Registry> = LazyLock::new(|| Registry::build(FROZEN));

impl Registry {
    /// Parses the current schemas and the given frozen files (tests add synthetic ones).
    pub(crate) fn build(frozen_files: &[FrozenFile]) -> Self {
        let current: Vec<SchemaInfo> = EventKind::ALL
            .iter()
            .map(|&kind| SchemaInfo::parse(kind, None, kind.schema_json()))
            .collect();
        let frozen: Vec<SchemaInfo> = frozen_files
            .iter()
            .filter_map(|f| {
                // A frozen file without a current schema is reported by the tests, not here.
                let kind = EventKind::ALL
                    .iter()
                    .copied()
                    .find(|k| k.file_stem() == f.stem)?;
                Some(SchemaInfo::parse(kind, Some(f.version), f.json))
            })
            .collect();
        let mut by_fingerprint = HashMap::new();
        // Frozen first, so the current schema wins where a frozen version has the same
        // fingerprint (the usual case: the newest frozen version is the current one) and no
        // resolution is done.
        for (i, info) in frozen.iter().enumerate() {
            by_fingerprint.insert(info.fingerprint, Writer::Frozen(i));
            by_fingerprint.insert(info.apache_avro_fingerprint, Writer::Frozen(i));
        }
        for info in &current {
            by_fingerprint.insert(info.fingerprint, Writer::Current(info.kind));
            by_fingerprint.insert(info.apache_avro_fingerprint, Writer::Current(info.kind));
        }
        Registry {
            current,
            frozen,
            by_fingerprint,
        }
    }
}
