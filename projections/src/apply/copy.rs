//! Writing folded rows with `COPY ... FROM STDIN (FORMAT binary)`, for tables known to
//! hold none of them yet (a rebuild's first load into its empty tables).
//!
//! Why: an upsert costs Postgres a parse of every value, a probe of the primary key and
//! the merge of the `ON CONFLICT` clause per row; a binary `COPY` only appends the rows
//! (values arrive in Postgres's own binary form, nothing to parse or compare), which is
//! several times cheaper per row. The rows are the same ones the upsert would have written
//! into empty tables, so the result is equal (see the `rebuild` tests).
//!
//! The buffer is sent every [`SEND_EVERY`] bytes, so a big load never holds more than that
//! much encoded at once.

use callstream_schemas::Timestamp;
use sqlx::PgConnection;
use uuid::Uuid;

/// Bytes encoded before they are sent to Postgres.
const SEND_EVERY: usize = 1 << 20;

/// Microseconds from the Unix epoch to Postgres's (2000-01-01).
const POSTGRES_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// One row's fields, in the order of the `COPY`'s columns.
pub(crate) struct Fields<'b> {
    buf: &'b mut Vec<u8>,
}

impl Fields<'_> {
    fn null(&mut self) {
        self.buf.extend_from_slice(&(-1i32).to_be_bytes());
    }

    fn bytes(&mut self, value: &[u8]) {
        // A field is at most 1 GB in Postgres; our values are far below.
        let len = i32::try_from(value.len()).unwrap_or(i32::MAX);
        self.buf.extend_from_slice(&len.to_be_bytes());
        self.buf.extend_from_slice(value);
    }

    pub(crate) fn text(&mut self, value: Option<&str>) -> &mut Self {
        match value {
            Some(v) => self.bytes(v.as_bytes()),
            None => self.null(),
        }
        self
    }

    /// `json`'s binary form is its text.
    pub(crate) fn json(&mut self, value: Option<&str>) -> &mut Self {
        self.text(value)
    }

    pub(crate) fn uuid(&mut self, value: Option<Uuid>) -> &mut Self {
        match value {
            Some(v) => self.bytes(v.as_bytes()),
            None => self.null(),
        }
        self
    }

    /// Microseconds since 2000-01-01, as sqlx encodes a `DateTime<Utc>`.
    pub(crate) fn timestamp(&mut self, value: Option<Timestamp>) -> &mut Self {
        match value {
            Some(v) => self.bytes(&timestamp_micros(v).to_be_bytes()),
            None => self.null(),
        }
        self
    }

    pub(crate) fn int2(&mut self, value: Option<i16>) -> &mut Self {
        match value {
            Some(v) => self.bytes(&v.to_be_bytes()),
            None => self.null(),
        }
        self
    }

    pub(crate) fn int4(&mut self, value: Option<i32>) -> &mut Self {
        match value {
            Some(v) => self.bytes(&v.to_be_bytes()),
            None => self.null(),
        }
        self
    }

    pub(crate) fn int8(&mut self, value: Option<i64>) -> &mut Self {
        match value {
            Some(v) => self.bytes(&v.to_be_bytes()),
            None => self.null(),
        }
        self
    }

    pub(crate) fn bool(&mut self, value: Option<bool>) -> &mut Self {
        match value {
            Some(v) => self.bytes(&[u8::from(v)]),
            None => self.null(),
        }
        self
    }
}

fn timestamp_micros(t: Timestamp) -> i64 {
    let since_unix = t.timestamp_micros();
    since_unix - POSTGRES_EPOCH_MICROS
}

/// `COPY {table} ({columns}) FROM STDIN (FORMAT binary)` of `rows`, each encoded by
/// `encode` into exactly `columns.len()` fields in column order. Returns the rows copied.
pub(crate) async fn copy_rows<R>(
    conn: &mut PgConnection,
    table: &str,
    columns: &[&str],
    rows: impl IntoIterator<Item = R>,
    mut encode: impl FnMut(&mut Fields<'_>, R),
) -> Result<u64, sqlx::Error> {
    let statement = format!(
        "COPY {table} ({}) FROM STDIN (FORMAT binary)",
        columns.join(", ")
    );
    let count = i16::try_from(columns.len())
        .map_err(|_| sqlx::Error::Protocol(format!("too many columns for COPY into {table}")))?;
    let mut copy = conn.copy_in_raw(&statement).await?;
    let mut buf = Vec::with_capacity(SEND_EVERY + 64 * 1024);
    // Signature, flags, header extension length.
    buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    buf.extend_from_slice(&0i32.to_be_bytes());
    buf.extend_from_slice(&0i32.to_be_bytes());
    for row in rows {
        buf.extend_from_slice(&count.to_be_bytes());
        encode(&mut Fields { buf: &mut buf }, row);
        if buf.len() >= SEND_EVERY {
            copy.send(std::mem::take(&mut buf)).await?;
            buf.reserve(SEND_EVERY + 64 * 1024);
        }
    }
    // Trailer.
    buf.extend_from_slice(&(-1i16).to_be_bytes());
    copy.send(buf).await?;
    copy.finish().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_count_from_the_postgres_epoch() {
        let epoch = chrono::DateTime::parse_from_rfc3339("2000-01-01T00:00:00Z")
            .map(|t| t.to_utc())
            .ok();
        assert_eq!(epoch.map(timestamp_micros), Some(0));
        let later = chrono::DateTime::parse_from_rfc3339("2000-01-01T00:00:01.5Z")
            .map(|t| t.to_utc())
            .ok();
        assert_eq!(later.map(timestamp_micros), Some(1_500_000));
    }

    #[test]
    fn fields_are_length_prefixed_and_null_is_minus_one() {
        let mut buf = Vec::new();
        Fields { buf: &mut buf }
            .text(Some("ab"))
            .text(None)
            .int2(Some(3));
        assert_eq!(
            buf,
            [
                &[0, 0, 0, 2, b'a', b'b'][..],
                &[0xff, 0xff, 0xff, 0xff],
                &[0, 0, 0, 2, 0, 3],
            ]
            .concat()
        );
    }
}
