//! An allocation-free structural check of a binary Avro body against its writer schema, run
//! before apache-avro decodes it.
//!
//! Why: apache-avro 0.21 reserves memory for an array or map block from the count in the data
//! (`Vec::reserve(count)`, count bounded only by its 512 MiB byte limit), so one corrupted
//! record can make a consumer abort on a multi-gigabyte allocation instead of returning an
//! error. This scan proves every length and count fits in the bytes that remain, every enum
//! and union index is in range and the body ends exactly where the schema does; after it,
//! decoding allocates at most in proportion to the input.

use std::collections::HashMap;

use apache_avro::{schema::Name, Schema};

use crate::varint::VarintError;

/// What the scan found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// The body ends before the schema does (or a count claims more items than there are
    /// bytes left).
    Truncated,
    /// The bytes cannot be a value of the schema.
    Invalid(String),
    /// The value ended with this many bytes left over.
    Trailing(usize),
}

/// Named types of a schema, for resolving references.
pub(crate) type Names = HashMap<Name, Schema>;

/// Collects the named types defined in `schema`.
pub(crate) fn names_of(schema: &Schema) -> Names {
    fn walk(schema: &Schema, names: &mut Names) {
        match schema {
            Schema::Record(r) => {
                names.insert(r.name.clone(), schema.clone());
                r.fields.iter().for_each(|f| walk(&f.schema, names));
            }
            Schema::Enum(e) => {
                names.insert(e.name.clone(), schema.clone());
            }
            Schema::Fixed(f) => {
                names.insert(f.name.clone(), schema.clone());
            }
            Schema::Union(u) => u.variants().iter().for_each(|s| walk(s, names)),
            Schema::Array(a) => walk(&a.items, names),
            Schema::Map(m) => walk(&m.types, names),
            _ => {}
        }
    }
    let mut names = HashMap::new();
    walk(schema, &mut names);
    names
}

/// Checks that `body` is exactly one value of `schema`.
pub(crate) fn check(schema: &Schema, names: &Names, body: &[u8]) -> Result<(), ScanError> {
    let mut cursor = Cursor { buf: body, pos: 0 };
    cursor.value(schema, names, 0)?;
    match body.len() - cursor.pos {
        0 => Ok(()),
        left => Err(ScanError::Trailing(left)),
    }
}

/// Nesting deeper than any schema here: guards the stack against recursive schemas.
const MAX_DEPTH: usize = 64;

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

fn invalid(what: impl Into<String>) -> ScanError {
    ScanError::Invalid(what.into())
}

impl Cursor<'_> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn skip(&mut self, n: usize) -> Result<(), ScanError> {
        if n > self.remaining() {
            return Err(ScanError::Truncated);
        }
        self.pos += n;
        Ok(())
    }

    /// A zig-zag varint, as Avro encodes int and long.
    fn long(&mut self) -> Result<i64, ScanError> {
        let rest = self.buf.get(self.pos..).ok_or(ScanError::Truncated)?;
        match crate::varint::read_long(rest) {
            Ok((n, len)) => {
                self.pos += len;
                Ok(n)
            }
            Err(VarintError::Truncated) => Err(ScanError::Truncated),
            Err(VarintError::TooLong) => Err(invalid("varint longer than 10 bytes")),
        }
    }

    fn int(&mut self) -> Result<i64, ScanError> {
        let n = self.long()?;
        if i32::try_from(n).is_err() {
            return Err(invalid(format!("int out of range: {n}")));
        }
        Ok(n)
    }

    fn length(&mut self) -> Result<usize, ScanError> {
        let n = self.long()?;
        usize::try_from(n).map_err(|_| invalid(format!("negative length {n}")))
    }

    fn index(&mut self, count: usize, what: &str) -> Result<usize, ScanError> {
        let n = self.long()?;
        usize::try_from(n)
            .ok()
            .filter(|&i| i < count)
            .ok_or_else(|| invalid(format!("{what} index {n} out of range 0..{count}")))
    }

    fn value(&mut self, schema: &Schema, names: &Names, depth: usize) -> Result<(), ScanError> {
        if depth > MAX_DEPTH {
            return Err(invalid("nesting too deep"));
        }
        match schema {
            Schema::Null => Ok(()),
            Schema::Boolean => match self.buf.get(self.pos) {
                Some(0 | 1) => self.skip(1),
                Some(b) => Err(invalid(format!("boolean byte {b}"))),
                None => Err(ScanError::Truncated),
            },
            Schema::Int | Schema::Date | Schema::TimeMillis => self.int().map(drop),
            Schema::Long
            | Schema::TimeMicros
            | Schema::TimestampMillis
            | Schema::TimestampMicros
            | Schema::TimestampNanos
            | Schema::LocalTimestampMillis
            | Schema::LocalTimestampMicros
            | Schema::LocalTimestampNanos => self.long().map(drop),
            Schema::Float => self.skip(4),
            Schema::Double => self.skip(8),
            Schema::Bytes | Schema::String | Schema::Uuid | Schema::BigDecimal => {
                let len = self.length()?;
                self.skip(len)
            }
            Schema::Fixed(f) => self.skip(f.size),
            Schema::Duration => self.skip(12),
            Schema::Decimal(d) => match d.inner.as_ref() {
                Schema::Fixed(f) => self.skip(f.size),
                _ => {
                    let len = self.length()?;
                    self.skip(len)
                }
            },
            Schema::Enum(e) => self.index(e.symbols.len(), "enum").map(drop),
            Schema::Union(u) => {
                let i = self.index(u.variants().len(), "union")?;
                self.value(&u.variants()[i], names, depth + 1)
            }
            Schema::Record(r) => r
                .fields
                .iter()
                .try_for_each(|f| self.value(&f.schema, names, depth + 1)),
            Schema::Array(a) => self.blocks(names, depth, &a.items, None),
            Schema::Map(m) => self.blocks(names, depth, &m.types, Some(&Schema::String)),
            Schema::Ref { name } => {
                let target = names
                    .get(name)
                    .ok_or_else(|| invalid(format!("unknown named type {name:?}")))?;
                self.value(target, names, depth + 1)
            }
        }
    }

    /// Array or map blocks: a count (negative: followed by a byte size), items, a zero count.
    fn blocks(
        &mut self,
        names: &Names,
        depth: usize,
        items: &Schema,
        keys: Option<&Schema>,
    ) -> Result<(), ScanError> {
        let item_min = min_size(items, names, 0) + keys.map_or(0, |_| 1);
        loop {
            let raw = self.long()?;
            if raw == 0 {
                return Ok(());
            }
            let count = raw.unsigned_abs();
            if raw < 0 {
                let size = self.length()?;
                if size > self.remaining() {
                    return Err(ScanError::Truncated);
                }
            }
            // The bound that keeps the decoder's `reserve(count)` proportional to the input.
            // Items that can encode in zero bytes are still limited to one per remaining byte;
            // no schema here has such items.
            if count > (self.remaining() / item_min.max(1)) as u64 {
                return Err(ScanError::Truncated);
            }
            for _ in 0..count {
                if let Some(key) = keys {
                    self.value(key, names, depth + 1)?;
                }
                self.value(items, names, depth + 1)?;
            }
        }
    }
}

/// The fewest bytes any value of `schema` encodes to.
fn min_size(schema: &Schema, names: &Names, depth: usize) -> usize {
    if depth > MAX_DEPTH {
        return 0;
    }
    match schema {
        Schema::Null => 0,
        Schema::Float => 4,
        Schema::Double => 8,
        Schema::Duration => 12,
        Schema::Fixed(f) => f.size,
        Schema::Record(r) => r
            .fields
            .iter()
            .map(|f| min_size(&f.schema, names, depth + 1))
            .sum(),
        Schema::Union(u) => {
            1 + u
                .variants()
                .iter()
                .map(|s| min_size(s, names, depth + 1))
                .min()
                .unwrap_or(0)
        }
        Schema::Ref { name } => names.get(name).map_or(0, |s| min_size(s, names, depth + 1)),
        // Everything else starts with at least one varint byte.
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(json: &str) -> Schema {
        Schema::parse_str(json).expect("test schema")
    }

    #[test]
    fn huge_counts_and_lengths_are_truncated_not_allocated() {
        let array = schema(r#"{"type":"array","items":"long"}"#);
        let map = schema(r#"{"type":"map","values":"long"}"#);
        let string = schema(r#""string""#);
        // zig-zag 2^28 (0x80 0x80 0x80 0x80 0x02), far more than the bytes that follow.
        let huge = [0x80, 0x80, 0x80, 0x80, 0x02, 0x02, 0x00];
        let no_names = Names::new();
        let cases: &[(&str, &Schema, &[u8], ScanError)] = &[
            ("array count", &array, &huge, ScanError::Truncated),
            ("map count", &map, &huge, ScanError::Truncated),
            ("string length", &string, &huge, ScanError::Truncated),
            (
                "negative count, huge size",
                &array,
                &[0x01, 0x80, 0x80, 0x80, 0x80, 0x02],
                ScanError::Truncated,
            ),
            (
                "ok array",
                &array,
                &[0x04, 0x02, 0x04, 0x00],
                ScanError::Trailing(0),
            ),
            (
                "ok array, trailing",
                &array,
                &[0x02, 0x02, 0x00, 0x07],
                ScanError::Trailing(1),
            ),
            (
                "varint too long",
                &array,
                &[0xff; 11],
                invalid("varint longer than 10 bytes"),
            ),
        ];
        for (name, schema, bytes, expected) in cases {
            let got = check(schema, &no_names, bytes)
                .err()
                .unwrap_or(ScanError::Trailing(0));
            assert_eq!(&got, expected, "{name}");
        }
    }

    #[test]
    fn indexes_and_booleans_are_range_checked() {
        let union = schema(r#"["null","long"]"#);
        let enumeration = schema(r#"{"type":"enum","name":"E","symbols":["a","b"]}"#);
        let boolean = schema(r#""boolean""#);
        let int = schema(r#""int""#);
        let names = Names::new();
        assert!(matches!(
            check(&union, &names, &[0x04]),
            Err(ScanError::Invalid(_))
        ));
        assert!(matches!(
            check(&union, &names, &[0x01]),
            Err(ScanError::Invalid(_))
        ));
        assert!(matches!(
            check(&enumeration, &names, &[0x04]),
            Err(ScanError::Invalid(_))
        ));
        assert!(matches!(
            check(&boolean, &names, &[0x02]),
            Err(ScanError::Invalid(_))
        ));
        // 2^32 does not fit an int.
        assert!(matches!(
            check(&int, &names, &[0x80, 0x80, 0x80, 0x80, 0x20]),
            Err(ScanError::Invalid(_))
        ));
        assert_eq!(check(&union, &names, &[0x02, 0x02]), Ok(()));
        assert_eq!(check(&enumeration, &names, &[0x02]), Ok(()));
    }
}
