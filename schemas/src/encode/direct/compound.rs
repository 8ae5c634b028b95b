//! Records, arrays and maps for the direct encoder (see the parent module): fields in schema
//! order, array items counted in one block, map entries sorted by key as the Value route sorts
//! them.

use apache_avro::schema::RecordField;
use apache_avro::Schema;
use serde::ser::{self, Serialize};

use super::{Result, Ser, Unsupported};
use crate::encode::{long, string};
use crate::scan::Names;

/// A record's fields, which must come in schema order (serde's derive emits declaration
/// order, which mirrors the schema; anything else takes the Value route).
pub(crate) struct Fields<'s, 'o> {
    fields: &'s [RecordField],
    names: &'s Names,
    out: &'o mut Vec<u8>,
    next: usize,
}

impl<'s, 'o> Fields<'s, 'o> {
    pub(super) fn new(fields: &'s [RecordField], names: &'s Names, out: &'o mut Vec<u8>) -> Self {
        Fields {
            fields,
            names,
            out,
            next: 0,
        }
    }
}

impl ser::SerializeStruct for Fields<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        let field = self.fields.get(self.next).ok_or(Unsupported)?;
        if field.name != key {
            return Err(Unsupported);
        }
        self.next += 1;
        value.serialize(Ser {
            schema: &field.schema,
            names: self.names,
            out: self.out,
            payload: false,
        })
    }

    fn end(self) -> Result {
        (self.next == self.fields.len())
            .then_some(())
            .ok_or(Unsupported)
    }
}

/// Array items: one block of `len` items when the length is known up front, otherwise
/// collected first and counted.
pub(crate) struct Items<'s, 'o> {
    items: &'s Schema,
    names: &'s Names,
    out: &'o mut Vec<u8>,
    /// The announced length, already written; `None`: items go to `buffer` first.
    announced: Option<usize>,
    buffer: Vec<u8>,
    count: usize,
}

impl<'s, 'o> Items<'s, 'o> {
    pub(super) fn new(
        items: &'s Schema,
        names: &'s Names,
        out: &'o mut Vec<u8>,
        len: Option<usize>,
    ) -> Result<Self> {
        if let Some(n) = len.filter(|&n| n > 0) {
            long(i64::try_from(n).map_err(|_| Unsupported)?, out);
        }
        Ok(Items {
            items,
            names,
            out,
            announced: len,
            buffer: Vec::new(),
            count: 0,
        })
    }

    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.count += 1;
        let out = match self.announced {
            Some(_) => &mut *self.out,
            None => &mut self.buffer,
        };
        value.serialize(Ser {
            schema: self.items,
            names: self.names,
            out,
            payload: false,
        })
    }

    fn finish(self) -> Result {
        match self.announced {
            Some(n) if n != self.count => return Err(Unsupported),
            Some(_) => {}
            None => {
                if self.count > 0 {
                    long(
                        i64::try_from(self.count).map_err(|_| Unsupported)?,
                        self.out,
                    );
                    self.out.extend_from_slice(&self.buffer);
                }
            }
        }
        long(0, self.out);
        Ok(())
    }
}

impl ser::SerializeSeq for Items<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.item(value)
    }

    fn end(self) -> Result {
        self.finish()
    }
}

impl ser::SerializeTuple for Items<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.item(value)
    }

    fn end(self) -> Result {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Items<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.item(value)
    }

    fn end(self) -> Result {
        self.finish()
    }
}

/// Map entries, each encoded on its own, then written sorted by key (the last value of a
/// repeated key wins, as in the map `to_value` builds).
pub(crate) struct Entries<'s, 'o> {
    types: &'s Schema,
    names: &'s Names,
    out: &'o mut Vec<u8>,
    entries: Vec<(String, Vec<u8>)>,
    key: Option<String>,
}

impl<'s, 'o> Entries<'s, 'o> {
    pub(super) fn new(types: &'s Schema, names: &'s Names, out: &'o mut Vec<u8>) -> Self {
        Entries {
            types,
            names,
            out,
            entries: Vec::new(),
            key: None,
        }
    }
}

impl ser::SerializeMap for Entries<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        self.key = Some(key.serialize(KeyText)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        let key = self.key.take().ok_or(Unsupported)?;
        let mut bytes = Vec::new();
        value.serialize(Ser {
            schema: self.types,
            names: self.names,
            out: &mut bytes,
            payload: false,
        })?;
        self.entries.push((key, bytes));
        Ok(())
    }

    fn end(mut self) -> Result {
        // Stable, so of equal keys the last one given stays last; keep only it.
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut kept: Vec<&(String, Vec<u8>)> = Vec::with_capacity(self.entries.len());
        for entry in &self.entries {
            match kept.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => kept.push(entry),
            }
        }
        if !kept.is_empty() {
            long(
                i64::try_from(kept.len()).map_err(|_| Unsupported)?,
                self.out,
            );
            for (key, bytes) in kept {
                string(key, self.out);
                self.out.extend_from_slice(bytes);
            }
        }
        long(0, self.out);
        Ok(())
    }
}

/// A map key, which `to_value` accepts only as a string.
struct KeyText;

impl ser::Serializer for KeyText {
    type Ok = String;
    type Error = Unsupported;
    type SerializeSeq = ser::Impossible<String, Unsupported>;
    type SerializeTuple = ser::Impossible<String, Unsupported>;
    type SerializeTupleStruct = ser::Impossible<String, Unsupported>;
    type SerializeTupleVariant = ser::Impossible<String, Unsupported>;
    type SerializeMap = ser::Impossible<String, Unsupported>;
    type SerializeStruct = ser::Impossible<String, Unsupported>;
    type SerializeStructVariant = ser::Impossible<String, Unsupported>;

    fn serialize_str(self, v: &str) -> Result<String> {
        Ok(v.to_owned())
    }

    fn serialize_char(self, v: char) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String> {
        Ok(variant.to_owned())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String> {
        value.serialize(self)
    }

    fn serialize_bool(self, _: bool) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_i8(self, _: i8) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_i16(self, _: i16) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_i32(self, _: i32) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_i64(self, _: i64) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_u8(self, _: u8) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_u16(self, _: u16) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_u32(self, _: u32) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_u64(self, _: u64) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_f32(self, _: f32) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_f64(self, _: f64) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_none(self) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_unit(self) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String> {
        Err(Unsupported)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(Unsupported)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(Unsupported)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(Unsupported)
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
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(Unsupported)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(Unsupported)
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
}
