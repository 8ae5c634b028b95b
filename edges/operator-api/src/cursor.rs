//! Keyset cursors: `(time, id)` of the last row of a page, so the next page starts strictly
//! after it in the same order, and rows inserted meanwhile never shift a page.
//!
//! A cursor reads `<microseconds since the epoch>_<id as 32 hex digits>`. It is opaque to
//! clients, but every string of that shape (the documented [`PATTERN`]) is a position, so
//! a well-formed cursor is never refused, and anything else is (400).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::ApiError;

/// The shape of a cursor, as the OpenAPI document states it.
pub const PATTERN: &str = "^[0-9]{1,16}_[0-9a-f]{32}$";

/// Position after a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub at: DateTime<Utc>,
    pub id: Uuid,
}

impl Cursor {
    pub fn encode(&self) -> String {
        format!("{}_{}", self.at.timestamp_micros(), self.id.simple())
    }

    /// A cursor from a previous page (or any string of its shape); anything else is 400.
    pub fn decode(text: &str) -> Result<Self, ApiError> {
        let bad = || ApiError::BadRequest("cursor is not one this API returned".into());
        let (micros, id) = text.split_once('_').ok_or_else(bad)?;
        let digits = |s: &str, hex: bool| {
            !s.is_empty()
                && s.chars().all(|c| {
                    c.is_ascii_digit() || (hex && c.is_ascii_hexdigit() && c.is_ascii_lowercase())
                })
        };
        // Rows older than the epoch have no cursor of this shape: they are not in the views.
        if !digits(micros, false) || id.len() != 32 || !digits(id, true) {
            return Err(bad());
        }
        let at = micros
            .parse::<i64>()
            .ok()
            .and_then(DateTime::from_timestamp_micros)
            .ok_or_else(bad)?;
        let id = Uuid::try_parse(id).map_err(|_| bad())?;
        Ok(Self { at, id })
    }
}

/// Default and largest page sizes.
pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 500;

/// The page size asked for, checked.
pub fn limit(asked: Option<i64>) -> Result<i64, ApiError> {
    match asked {
        None => Ok(DEFAULT_LIMIT),
        Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::Unprocessable(format!(
            "limit={n} is outside 1..={MAX_LIMIT}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let c = Cursor {
            at: DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap_or_default(),
            id: Uuid::new_v4(),
        };
        assert_eq!(Cursor::decode(&c.encode()), Ok(c));
        let bad = [
            "",
            "!!!",
            "bm9waXBl",
            "12_nope",
            "-5_0123456789abcdef0123456789abcdef",
            "12_0123456789ABCDEF0123456789ABCDEF",
            "12_0123456789abcdef0123456789abcde",
        ];
        for bad in bad {
            assert!(Cursor::decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_string_of_the_documented_shape_is_a_cursor() {
        for text in [
            "0_00000000000000000000000000000000",
            "9999999999999999_ffffffffffffffffffffffffffffffff",
            "0000000000000001_0123456789abcdef0123456789abcdef",
        ] {
            assert!(Cursor::decode(text).is_ok(), "{text}");
        }
    }

    #[test]
    fn limits_are_bounded() {
        assert_eq!(limit(None), Ok(DEFAULT_LIMIT));
        assert_eq!(limit(Some(1)), Ok(1));
        assert!(limit(Some(0)).is_err());
        assert!(limit(Some(MAX_LIMIT + 1)).is_err());
    }
}
