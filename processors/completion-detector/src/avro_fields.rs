//! Reading a launch or a completion straight from its Avro bytes, for the
//! few fields the join needs, without building the event.
//!
//! Why: the generic decode (apache-avro's value tree, field names and all,
//! then serde) cost about 50,000 instructions an input, over half of the
//! detector's time per event; this reader borrows the strings it returns
//! and allocates nothing.
//!
//! How it stays exact: only bytes written with the *current* schema of the
//! type (its fingerprint in the single-object header) take this path. The
//! reader walks that schema field by field and checks every value as the
//! full decoder does: UTF-8 strings, UUIDs (16 raw bytes or their text),
//! int range, timestamp range, boolean bytes, enum and union indexes, and
//! nothing left over. Anything else, and any failure here, goes to the full
//! decoder, which then gives the same value or the error to dead-letter.
//! Property tests compare the two on valid and on mutated bytes.

use apache_avro::schema::RecordSchema;
use apache_avro::Schema;
use callstream_schemas::varint::read_long;
use callstream_schemas::{split_header, EventKind, Fingerprint};
use uuid::Uuid;

/// Nesting deeper than these schemas go: guards the stack.
const MAX_DEPTH: usize = 16;

/// One field's value, borrowed from the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Val<'a> {
    Null,
    Bool(bool),
    Long(i64),
    Str(&'a str),
    Uuid(Uuid),
    /// An enum value: its symbol.
    Symbol(&'a str),
    /// A nested record (checked, not kept).
    Record,
}

impl<'a> Val<'a> {
    pub fn str(self) -> Option<&'a str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A string, or null.
    pub fn opt_str(self) -> Option<Option<&'a str>> {
        match self {
            Val::Str(s) => Some(Some(s)),
            Val::Null => Some(None),
            _ => None,
        }
    }

    pub fn uuid(self) -> Option<Uuid> {
        match self {
            Val::Uuid(id) => Some(id),
            _ => None,
        }
    }

    /// A UUID, or null.
    pub fn opt_uuid(self) -> Option<Option<Uuid>> {
        match self {
            Val::Uuid(id) => Some(Some(id)),
            Val::Null => Some(None),
            _ => None,
        }
    }

    pub fn long(self) -> Option<i64> {
        match self {
            Val::Long(n) => Some(n),
            _ => None,
        }
    }

    pub fn symbol(self) -> Option<&'a str> {
        match self {
            Val::Symbol(s) => Some(s),
            _ => None,
        }
    }
}

/// Whether the reader handles every type in `schema` (a schema with any
/// other type never takes the fast path).
fn supported(schema: &Schema, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match schema {
        Schema::Null
        | Schema::Boolean
        | Schema::Int
        | Schema::Long
        | Schema::String
        | Schema::Uuid
        | Schema::TimestampMillis
        | Schema::Enum(_) => true,
        Schema::Union(u) => u.variants().iter().all(|v| supported(v, depth + 1)),
        Schema::Record(r) => r.fields.iter().all(|f| supported(&f.schema, depth + 1)),
        _ => false,
    }
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Some(head)
    }

    /// A zig-zag varint (Avro's int and long), at most 10 bytes.
    fn long(&mut self) -> Option<i64> {
        let (n, len) = read_long(self.rest).ok()?;
        self.rest = self.rest.get(len..)?;
        Some(n)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.long()?).ok()?;
        self.take(len)
    }

    /// The next value of `schema`; the schemas are static, so an enum's
    /// symbol outlives the bytes.
    fn value(&mut self, schema: &'static Schema, depth: usize) -> Option<Val<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match schema {
            Schema::Null => Val::Null,
            Schema::Boolean => match self.take(1)? {
                [0] => Val::Bool(false),
                [1] => Val::Bool(true),
                _ => return None,
            },
            Schema::Int => {
                let n = self.long()?;
                i32::try_from(n).ok()?;
                Val::Long(n)
            }
            Schema::Long => Val::Long(self.long()?),
            // The event's timestamps become chrono times: out of their range fails.
            Schema::TimestampMillis => {
                let ms = self.long()?;
                chrono::DateTime::from_timestamp_millis(ms)?;
                Val::Long(ms)
            }
            Schema::String => Val::Str(std::str::from_utf8(self.bytes()?).ok()?),
            // As apache-avro reads a UUID: 16 bytes are the raw id, anything else its text.
            Schema::Uuid => {
                let bytes = self.bytes()?;
                let id = if bytes.len() == 16 {
                    Uuid::from_slice(bytes).ok()?
                } else {
                    Uuid::parse_str(std::str::from_utf8(bytes).ok()?).ok()?
                };
                Val::Uuid(id)
            }
            Schema::Enum(e) => {
                let index = self.long()?;
                i32::try_from(index).ok()?;
                let symbol = e.symbols.get(usize::try_from(index).ok()?)?;
                Val::Symbol(symbol)
            }
            Schema::Union(u) => {
                let index = usize::try_from(self.long()?).ok()?;
                return self.value(u.variants().get(index)?, depth + 1);
            }
            Schema::Record(r) => {
                for field in &r.fields {
                    self.value(&field.schema, depth + 1)?;
                }
                Val::Record
            }
            _ => return None,
        })
    }
}

/// The current schema of one event type and which of its top-level fields
/// a caller wants, in the caller's order.
#[derive(Debug)]
pub(crate) struct Layout {
    fingerprint: Fingerprint,
    record: &'static RecordSchema,
    /// Per field of the record: the slot it fills, if wanted.
    slots: Vec<Option<usize>>,
}

impl Layout {
    /// `None` when the schema has a type the reader does not handle or
    /// lacks a wanted field: every input then takes the full decoder.
    pub fn new(kind: EventKind, wanted: &[&str]) -> Option<Self> {
        let Schema::Record(record) = kind.schema() else {
            return None;
        };
        if !record.fields.iter().all(|f| supported(&f.schema, 1)) {
            return None;
        }
        let slots: Vec<Option<usize>> = record
            .fields
            .iter()
            .map(|f| wanted.iter().position(|w| *w == f.name))
            .collect();
        if slots.iter().flatten().count() != wanted.len() {
            return None;
        }
        Some(Self {
            fingerprint: kind.fingerprint(),
            record,
            slots,
        })
    }

    /// The wanted fields of `bytes`, if they are a valid value of the
    /// current schema; `None` sends the bytes to the full decoder.
    pub fn read<'a, const N: usize>(&self, bytes: &'a [u8]) -> Option<[Val<'a>; N]> {
        let (fingerprint, body) = split_header(bytes).ok()?;
        if fingerprint != self.fingerprint {
            return None;
        }
        let mut out = [Val::Null; N];
        let mut reader = Reader { rest: body };
        for (field, slot) in self.record.fields.iter().zip(&self.slots) {
            let value = reader.value(&field.schema, 1)?;
            if let Some(slot) = slot {
                *out.get_mut(*slot)? = value;
            }
        }
        reader.rest.is_empty().then_some(out)
    }
}

#[cfg(test)]
#[path = "avro_fields_tests.rs"]
mod tests;
