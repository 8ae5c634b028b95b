//! Encoding a Rust value straight to Avro binary, driven by its schema, with no
//! `apache_avro::types::Value` in between.
//!
//! Why: `to_value` built a tree of owned strings, boxes and vectors for every event (a
//! `String` per field name), only for the encoder to walk it once and drop it; it was most of
//! what encoding cost.
//!
//! Guarantees: it writes exactly the bytes the Value route (`to_value`, then the parent
//! module's encoder) writes. Every `serialize_*` method does what that encoder does with the
//! value `to_value` makes for the same call; wherever the two could differ (fields out of
//! schema order, skipped fields, variants with data, nested options, floats, bytes) it gives
//! up with [`Unsupported`], and the caller discards what was written and takes the Value
//! route, which also gives the error when there is one. Tests compare both routes byte for
//! byte on random values of every event type.

use std::fmt;

use apache_avro::Schema;
use serde::ser::{self, Serialize};

use super::{long, string};

mod compound;

use crate::scan::Names;
use compound::{Entries, Fields, Items};

/// Appends `value` as `schema` to `out`; on `Err` the caller truncates `out`.
pub(crate) fn to_body<T: Serialize + ?Sized>(
    value: &T,
    schema: &Schema,
    names: &Names,
    out: &mut Vec<u8>,
) -> Result {
    value.serialize(Ser {
        schema,
        names,
        out,
        payload: false,
    })
}

/// The direct route cannot encode this the way the Value route does; take the Value route.
#[derive(Debug)]
pub(crate) struct Unsupported;

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not encodable directly")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Unsupported
    }
}

type Result<T = ()> = std::result::Result<T, Unsupported>;

struct Ser<'s, 'o> {
    schema: &'s Schema,
    names: &'s Names,
    out: &'o mut Vec<u8>,
    /// Serialising what `Some(..)` holds: `to_value` wraps it in a union, so another option
    /// inside would not encode the way a plain value does.
    payload: bool,
}

impl<'s, 'o> Ser<'s, 'o> {
    fn resolved(&self) -> Result<&'s Schema> {
        match self.schema {
            Schema::Ref { name } => self.names.get(name).ok_or(Unsupported),
            other => Ok(other),
        }
    }

    /// Where a value that is not null goes: the schema itself, or the non-null branch of a
    /// union (its index written first).
    fn target(&mut self) -> Result<&'s Schema> {
        let schema = self.resolved()?;
        let Schema::Union(u) = schema else {
            return Ok(schema);
        };
        let (index, branch) = u
            .variants()
            .iter()
            .enumerate()
            .find(|(_, s)| !matches!(s, Schema::Null))
            .ok_or(Unsupported)?;
        long(index as i64, self.out);
        match branch {
            Schema::Ref { name } => self.names.get(name).ok_or(Unsupported),
            Schema::Union(_) => Err(Unsupported),
            other => Ok(other),
        }
    }

    /// A null: the null schema, or the null branch of a union.
    fn null(self) -> Result {
        match self.resolved()? {
            Schema::Null => Ok(()),
            Schema::Union(u) => {
                let index = u
                    .variants()
                    .iter()
                    .position(|s| matches!(s, Schema::Null))
                    .ok_or(Unsupported)?;
                long(index as i64, self.out);
                Ok(())
            }
            _ => Err(Unsupported),
        }
    }

    /// What `to_value` makes a `Value::Int`.
    fn int(mut self, n: i32) -> Result {
        match self.target()? {
            Schema::Int | Schema::Long | Schema::TimestampMillis => {
                long(i64::from(n), self.out);
                Ok(())
            }
            _ => Err(Unsupported),
        }
    }

    /// What `to_value` makes a `Value::Long`.
    fn long(mut self, n: i64) -> Result {
        match self.target()? {
            Schema::Long | Schema::TimestampMillis => {
                long(n, self.out);
                Ok(())
            }
            _ => Err(Unsupported),
        }
    }

    /// What `to_value` makes a `Value::String`.
    fn text(mut self, s: &str) -> Result {
        match self.target()? {
            Schema::String => string(s, self.out),
            Schema::Uuid => {
                uuid::Uuid::parse_str(s).map_err(|_| Unsupported)?;
                string(s, self.out);
            }
            Schema::Enum(e) => {
                let index = e.symbols.iter().position(|x| x == s).ok_or(Unsupported)?;
                long(index as i64, self.out);
            }
            _ => return Err(Unsupported),
        }
        Ok(())
    }
}

impl<'s, 'o> ser::Serializer for Ser<'s, 'o> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Items<'s, 'o>;
    type SerializeTuple = Items<'s, 'o>;
    type SerializeTupleStruct = Items<'s, 'o>;
    type SerializeTupleVariant = ser::Impossible<(), Unsupported>;
    type SerializeMap = Entries<'s, 'o>;
    type SerializeStruct = Fields<'s, 'o>;
    type SerializeStructVariant = ser::Impossible<(), Unsupported>;

    fn serialize_bool(mut self, v: bool) -> Result {
        match self.target()? {
            Schema::Boolean => {
                self.out.push(u8::from(v));
                Ok(())
            }
            _ => Err(Unsupported),
        }
    }

    fn serialize_i8(self, v: i8) -> Result {
        self.int(i32::from(v))
    }

    fn serialize_i16(self, v: i16) -> Result {
        self.int(i32::from(v))
    }

    fn serialize_i32(self, v: i32) -> Result {
        self.int(v)
    }

    fn serialize_i64(self, v: i64) -> Result {
        self.long(v)
    }

    fn serialize_u8(self, v: u8) -> Result {
        self.int(i32::from(v))
    }

    fn serialize_u16(self, v: u16) -> Result {
        self.int(i32::from(v))
    }

    fn serialize_u32(self, v: u32) -> Result {
        match i32::try_from(v) {
            Ok(n) => self.int(n),
            Err(_) => self.long(i64::from(v)),
        }
    }

    fn serialize_u64(self, v: u64) -> Result {
        self.long(i64::try_from(v).map_err(|_| Unsupported)?)
    }

    fn serialize_f32(self, _: f32) -> Result {
        Err(Unsupported)
    }

    fn serialize_f64(mut self, v: f64) -> Result {
        match self.target()? {
            Schema::Double => {
                self.out.extend_from_slice(&v.to_le_bytes());
                Ok(())
            }
            _ => Err(Unsupported),
        }
    }

    fn serialize_char(self, v: char) -> Result {
        self.text(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result {
        self.text(v)
    }

    fn serialize_bytes(self, _: &[u8]) -> Result {
        Err(Unsupported)
    }

    fn serialize_none(self) -> Result {
        if self.payload || !matches!(self.resolved()?, Schema::Union(_)) {
            return Err(Unsupported);
        }
        self.null()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        if self.payload || !matches!(self.resolved()?, Schema::Union(_)) {
            return Err(Unsupported);
        }
        value.serialize(Ser {
            payload: true,
            ..self
        })
    }

    fn serialize_unit(self) -> Result {
        self.null()
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result {
        self.null()
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        self.text(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result {
        Err(Unsupported)
    }

    fn serialize_seq(mut self, len: Option<usize>) -> Result<Items<'s, 'o>> {
        let Schema::Array(a) = self.target()? else {
            return Err(Unsupported);
        };
        Items::new(&a.items, self.names, self.out, len)
    }

    fn serialize_tuple(self, len: usize) -> Result<Items<'s, 'o>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Items<'s, 'o>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(Unsupported)
    }

    fn serialize_map(mut self, _: Option<usize>) -> Result<Entries<'s, 'o>> {
        let Schema::Map(m) = self.target()? else {
            return Err(Unsupported);
        };
        Ok(Entries::new(&m.types, self.names, self.out))
    }

    fn serialize_struct(mut self, _: &'static str, _: usize) -> Result<Fields<'s, 'o>> {
        let Schema::Record(r) = self.target()? else {
            return Err(Unsupported);
        };
        Ok(Fields::new(&r.fields, self.names, self.out))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(Unsupported)
    }

    fn is_human_readable(&self) -> bool {
        // What apache-avro's serializer says (it reads the same setting, default false).
        apache_avro::util::set_serde_human_readable(false)
    }
}

#[cfg(test)]
mod tests;
