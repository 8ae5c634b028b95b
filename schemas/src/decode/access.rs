//! The parts of the direct decoder that walk inside a value: record fields, array and map
//! blocks, keys and enum symbols (see the parent module).

use apache_avro::Schema;
use serde::de::{self, DeserializeSeed, Visitor};
use serde::forward_to_deserialize_any;

use super::{De, Failed, Input, Result};
use crate::scan::Names;

/// A record's fields, in schema order, as a map from field name to value.
pub(super) struct Record<'s, 'b, 'i, F> {
    pub(super) fields: F,
    pub(super) names: &'s Names,
    pub(super) input: &'i mut Input<'b>,
    pub(super) next: Option<&'s Schema>,
}

impl<'de, 's, F> de::MapAccess<'de> for Record<'s, '_, '_, F>
where
    F: Iterator<Item = &'s apache_avro::schema::RecordField>,
{
    type Error = Failed;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let Some(field) = self.fields.next() else {
            return Ok(None);
        };
        self.next = Some(&field.schema);
        seed.deserialize(Key(&field.name)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let schema = self.next.take().ok_or(Failed)?;
        seed.deserialize(De {
            schema,
            names: self.names,
            input: self.input,
        })
    }
}

/// Array items or map entries, block by block.
pub(super) struct Blocks<'s, 'b, 'i> {
    items: &'s Schema,
    names: &'s Names,
    input: &'i mut Input<'b>,
    /// Items left in the current block; `None` once the closing block is read.
    left: Option<u64>,
}

impl<'s, 'b, 'i> Blocks<'s, 'b, 'i> {
    pub(super) fn new(items: &'s Schema, names: &'s Names, input: &'i mut Input<'b>) -> Self {
        Blocks {
            items,
            names,
            input,
            left: Some(0),
        }
    }

    /// Whether another item follows (reading block headers as needed).
    fn more(&mut self) -> Result<bool> {
        loop {
            match self.left {
                None => return Ok(false),
                Some(0) => {
                    let count = self.input.block()?;
                    self.left = (count > 0).then_some(count);
                }
                Some(n) => {
                    self.left = Some(n - 1);
                    return Ok(true);
                }
            }
        }
    }

    fn item(&mut self) -> De<'s, 'b, '_> {
        De {
            schema: self.items,
            names: self.names,
            input: self.input,
        }
    }
}

impl<'de> de::SeqAccess<'de> for Blocks<'_, '_, '_> {
    type Error = Failed;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if !self.more()? {
            return Ok(None);
        }
        seed.deserialize(self.item()).map(Some)
    }
}

impl<'de> de::MapAccess<'de> for Blocks<'_, '_, '_> {
    type Error = Failed;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if !self.more()? {
            return Ok(None);
        }
        seed.deserialize(Key(self.input.str()?)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(self.item())
    }
}

/// A field name or map key: apache-avro hands these over as an owned string whatever is asked.
pub(super) struct Key<'a>(pub(super) &'a str);

impl<'de> de::Deserializer<'de> for Key<'_> {
    type Error = Failed;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_str(self.0)
    }

    forward_to_deserialize_any! {
        bool u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 char str string unit option
        seq bytes byte_buf map unit_struct newtype_struct
        tuple_struct struct tuple enum identifier ignored_any
    }
}

/// An enum symbol as a unit variant.
pub(super) struct Unit<'a>(pub(super) &'a str);

impl<'de> de::EnumAccess<'de> for Unit<'_> {
    type Error = Failed;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        Ok((seed.deserialize(Key(self.0))?, self))
    }
}

impl<'de> de::VariantAccess<'de> for Unit<'_> {
    type Error = Failed;

    fn unit_variant(self) -> Result<()> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value> {
        Err(Failed)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value> {
        Err(Failed)
    }

    fn struct_variant<V: Visitor<'de>>(self, _: &'static [&'static str], _: V) -> Result<V::Value> {
        Err(Failed)
    }
}
