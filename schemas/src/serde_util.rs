//! Serde adapters that make Rust values land on the Avro types of the `.avsc` files.
//!
//! apache-avro's serializer is not human-readable, so `uuid::Uuid` would serialize as 16 raw
//! bytes, which do not resolve to Avro's `uuid` logical type (a string). These adapters write
//! the hyphenated string form, which both resolves and reads well in standard tools.

/// `Uuid` as its hyphenated string.
pub(crate) mod uuid_str {
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};
    use uuid::Uuid;

    pub(crate) fn serialize<S: Serializer>(id: &Uuid, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&id.hyphenated())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
        let text = String::deserialize(d)?;
        Uuid::parse_str(&text).map_err(D::Error::custom)
    }
}

/// `Option<Uuid>` as null or its hyphenated string.
pub(crate) mod opt_uuid_str {
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};
    use uuid::Uuid;

    pub(crate) fn serialize<S: Serializer>(id: &Option<Uuid>, s: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => s.serialize_some(&id.hyphenated().to_string()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Uuid>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| Uuid::parse_str(&text).map_err(D::Error::custom))
            .transpose()
    }
}

/// `Vec<Timestamp>` as an array of `timestamp-millis` longs.
pub(crate) mod ts_millis_vec {
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};

    use crate::types::Timestamp;

    pub(crate) fn serialize<S: Serializer>(at: &[Timestamp], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(at.iter().map(Timestamp::timestamp_millis))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Timestamp>, D::Error> {
        Vec::<i64>::deserialize(d)?
            .into_iter()
            .map(|ms| {
                chrono::DateTime::from_timestamp_millis(ms)
                    .ok_or_else(|| D::Error::custom(format!("timestamp out of range: {ms}")))
            })
            .collect()
    }
}
