//! Decoding a binary Avro body straight into its Rust type, driven by the writer schema, with
//! no `apache_avro::types::Value` in between.
//!
//! Why: the Value route (`from_avro_datum` then `from_value`) rebuilt the schema's name table on
//! every call, allocated a `String` for every field name of every record and a box for every
//! union, then walked that tree again; about a third of a processor's thread went there.
//!
//! Guarantees: it only ever answers what the Value route answers. Each `deserialize_*` method
//! mirrors apache-avro's `Deserializer` for the value `decode` would have built from the same
//! bytes and schema; on anything it does not cover (schema kinds no `.avsc` uses, such as bytes
//! or fixed), and on every failure, it returns `None` and the caller takes the Value route,
//! which then gives the typed error. Tests compare both routes on random values of every type.

use std::fmt;

use apache_avro::Schema;
use serde::de::{self, DeserializeOwned, Visitor};
use serde::forward_to_deserialize_any;

use crate::scan::Names;

mod access;

use access::{Blocks, Record, Unit};

/// `T` from exactly `body`, or `None` (see the module docs).
pub(crate) fn from_body<T: DeserializeOwned>(
    schema: &Schema,
    names: &Names,
    body: &[u8],
) -> Option<T> {
    let mut input = Input { buf: body, pos: 0 };
    let value = T::deserialize(De {
        schema,
        names,
        input: &mut input,
    })
    .ok()?;
    (input.pos == body.len()).then_some(value)
}

/// Any failure: the caller falls back to the Value route for the real error.
#[derive(Debug)]
pub(crate) struct Failed;

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not decodable directly")
    }
}

impl std::error::Error for Failed {}

impl de::Error for Failed {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Failed
    }
}

type Result<T> = std::result::Result<T, Failed>;

struct Input<'b> {
    buf: &'b [u8],
    pos: usize,
}

impl<'b> Input<'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8]> {
        let end = self.pos.checked_add(n).ok_or(Failed)?;
        let bytes = self.buf.get(self.pos..end).ok_or(Failed)?;
        self.pos = end;
        Ok(bytes)
    }

    fn long(&mut self) -> Result<i64> {
        let rest = self.buf.get(self.pos..).ok_or(Failed)?;
        let (n, len) = crate::varint::read_long(rest).map_err(|_| Failed)?;
        self.pos += len;
        Ok(n)
    }

    fn index(&mut self, count: usize) -> Result<usize> {
        usize::try_from(self.long()?)
            .ok()
            .filter(|&i| i < count)
            .ok_or(Failed)
    }

    fn str(&mut self) -> Result<&'b str> {
        let len = usize::try_from(self.long()?).map_err(|_| Failed)?;
        std::str::from_utf8(self.take(len)?).map_err(|_| Failed)
    }

    /// The count of the next array or map block (0 ends the value).
    fn block(&mut self) -> Result<u64> {
        let raw = self.long()?;
        if raw < 0 {
            self.long()?; // the block's byte size
        }
        Ok(raw.unsigned_abs())
    }
}

struct De<'s, 'b, 'i> {
    schema: &'s Schema,
    names: &'s Names,
    input: &'i mut Input<'b>,
}

impl<'s, 'b, 'i> De<'s, 'b, 'i> {
    /// The schema with a reference followed to its definition.
    fn resolved(&self) -> Result<&'s Schema> {
        match self.schema {
            Schema::Ref { name } => self.names.get(name).ok_or(Failed),
            other => Ok(other),
        }
    }

    fn with(&mut self, schema: &'s Schema) -> De<'s, 'b, '_> {
        De {
            schema,
            names: self.names,
            input: self.input,
        }
    }

    /// A uuid as `Value::Uuid` holds it: parsed, then shown hyphenated.
    fn uuid<R>(&mut self, f: impl FnOnce(&str) -> Result<R>) -> Result<R> {
        let id = uuid::Uuid::parse_str(self.input.str()?).map_err(|_| Failed)?;
        f(id.hyphenated()
            .encode_lower(&mut uuid::Uuid::encode_buffer()))
    }

    /// The branch of a union the input names.
    fn branch(&mut self, union: &'s apache_avro::schema::UnionSchema) -> Result<&'s Schema> {
        let variants = union.variants();
        let i = self.input.index(variants.len())?;
        let branch = &variants[i];
        match branch {
            Schema::Ref { name } => self.names.get(name).ok_or(Failed),
            other => Ok(other),
        }
    }
}

impl<'de> de::Deserializer<'de> for De<'_, '_, '_> {
    type Error = Failed;

    fn deserialize_any<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        match self.resolved()? {
            Schema::Null => visitor.visit_unit(),
            Schema::Boolean => match self.input.take(1)?[0] {
                0 => visitor.visit_bool(false),
                1 => visitor.visit_bool(true),
                _ => Err(Failed),
            },
            Schema::Int => {
                visitor.visit_i32(i32::try_from(self.input.long()?).map_err(|_| Failed)?)
            }
            Schema::Long | Schema::TimestampMillis => visitor.visit_i64(self.input.long()?),
            Schema::Double => {
                let bytes: [u8; 8] = self.input.take(8)?.try_into().map_err(|_| Failed)?;
                visitor.visit_f64(f64::from_le_bytes(bytes))
            }
            Schema::String => visitor.visit_str(self.input.str()?),
            Schema::Uuid => self.uuid(|s| visitor.visit_str(s)),
            Schema::Enum(e) => {
                let i = self.input.index(e.symbols.len())?;
                visitor.visit_str(&e.symbols[i])
            }
            // A union reads as its branch (a union in a union is not valid Avro).
            Schema::Union(u) => {
                let branch = self.branch(u)?;
                self.with(branch).deserialize_any(visitor)
            }
            Schema::Record(r) => visitor.visit_map(Record {
                fields: r.fields.iter(),
                names: self.names,
                input: self.input,
                next: None,
            }),
            Schema::Array(a) => visitor.visit_seq(Blocks::new(&a.items, self.names, self.input)),
            Schema::Map(m) => visitor.visit_map(Blocks::new(&m.types, self.names, self.input)),
            _ => Err(Failed),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 ignored_any
    }

    fn deserialize_char<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Failed)
    }

    fn deserialize_str<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        match self.resolved()? {
            Schema::String => visitor.visit_str(self.input.str()?),
            Schema::Uuid => self.uuid(|s| visitor.visit_str(s)),
            _ => Err(Failed),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        match self.resolved()? {
            Schema::String | Schema::Uuid | Schema::Enum(_) => self.deserialize_any(visitor),
            Schema::Union(u) => {
                let branch = self.branch(u)?;
                let inner = self.with(branch);
                match branch {
                    Schema::String | Schema::Uuid => inner.deserialize_any(visitor),
                    _ => Err(Failed),
                }
            }
            _ => Err(Failed),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Failed)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Failed)
    }

    fn deserialize_option<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let Schema::Union(u) = self.resolved()? else {
            return Err(Failed);
        };
        match self.branch(u)? {
            Schema::Null => visitor.visit_none(),
            branch => visitor.visit_some(self.with(branch)),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        match self.resolved()? {
            Schema::Null => visitor.visit_unit(),
            Schema::Union(u) => match self.branch(u)? {
                Schema::Null => visitor.visit_unit(),
                _ => Err(Failed),
            },
            _ => Err(Failed),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        match self.resolved()? {
            Schema::Array(_) => self.deserialize_any(visitor),
            Schema::Union(u) => match self.branch(u)? {
                Schema::Array(a) => {
                    visitor.visit_seq(Blocks::new(&a.items, self.names, self.input))
                }
                Schema::Null => {
                    visitor.visit_seq(de::value::SeqDeserializer::new(std::iter::empty::<()>()))
                }
                _ => Err(Failed),
            },
            _ => Err(Failed),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.resolved()? {
            Schema::Map(_) | Schema::Record(_) => self.deserialize_any(visitor),
            _ => Err(Failed),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        mut self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.resolved()? {
            Schema::Record(_) => self.deserialize_any(visitor),
            Schema::Union(u) => match self.branch(u)? {
                Schema::Record(r) => visitor.visit_map(Record {
                    fields: r.fields.iter(),
                    names: self.names,
                    input: self.input,
                    next: None,
                }),
                Schema::Null => visitor.visit_map(de::value::MapDeserializer::new(
                    std::iter::empty::<((), ())>(),
                )),
                _ => Err(Failed),
            },
            _ => Err(Failed),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        // Enums from strings and enum symbols; records and unions as enums are not used here.
        match self.resolved()? {
            Schema::String => visitor.visit_enum(Unit(self.input.str()?)),
            Schema::Enum(e) => {
                let i = self.input.index(e.symbols.len())?;
                visitor.visit_enum(Unit(&e.symbols[i]))
            }
            _ => Err(Failed),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn is_human_readable(&self) -> bool {
        // What apache-avro's deserializer says (it reads the same setting, default false).
        apache_avro::util::set_serde_human_readable(false)
    }
}

#[cfg(test)]
pub(crate) mod tests;
