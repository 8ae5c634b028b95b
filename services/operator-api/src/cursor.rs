//! Opaque keyset cursors: `(time, id)` of the last row of a page, so the next page starts
//! strictly after it in the same order, and rows inserted meanwhile never shift a page.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::ApiError;

/// Position after a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub at: DateTime<Utc>,
    pub id: Uuid,
}

impl Cursor {
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}|{}", self.at.timestamp_micros(), self.id))
    }

    /// A cursor from a previous page; anything else is 400.
    pub fn decode(text: &str) -> Result<Self, ApiError> {
        let bad = || ApiError::BadRequest("cursor is not one this API returned".into());
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad())?;
        let text = String::from_utf8(bytes).map_err(|_| bad())?;
        let (micros, id) = text.split_once('|').ok_or_else(bad)?;
        let at = micros
            .parse::<i64>()
            .ok()
            .and_then(DateTime::from_timestamp_micros)
            .ok_or_else(bad)?;
        let id = id.parse().map_err(|_| bad())?;
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
        for bad in ["", "!!!", "bm9waXBl", &URL_SAFE_NO_PAD.encode("12|nope")] {
            assert!(Cursor::decode(bad).is_err(), "{bad:?}");
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
