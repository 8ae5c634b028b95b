//! A tiny binary codec for the detector's state: LEB128 varints (zigzag for
//! signed), length-prefixed byte strings and raw 16-byte UUIDs.
//!
//! Why not JSON: the open-launch state is the detector's whole memory and it
//! is written to the changelog on every change; a launch in JSON costs about
//! four times the bytes and a parse. Guarantee: `Reader` never panics, every
//! malformed or truncated input is a `CodecError`.

use thiserror::Error;
use uuid::Uuid;

/// State bytes that do not decode: a bug or a foreign writer, never retriable.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodecError {
    #[error("state ends early (needed {needed} more bytes)")]
    Truncated { needed: usize },
    #[error("varint longer than 10 bytes")]
    VarintTooLong,
    #[error("string is not UTF-8")]
    NotUtf8,
    #[error("unknown {what} tag {tag}")]
    UnknownTag { what: &'static str, tag: u8 },
    #[error("unsupported state version {0}")]
    Version(u8),
    #[error("{0} trailing bytes after the state")]
    Trailing(usize),
}

/// Appends encoded values to a buffer.
#[derive(Debug, Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            buf: Vec::with_capacity(capacity),
        }
    }

    pub fn u8(&mut self, value: u8) {
        self.buf.push(value);
    }

    pub fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            // Truncation to the low seven bits is the encoding.
            self.buf.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    pub fn signed(&mut self, value: i64) {
        self.varint(((value << 1) ^ (value >> 63)) as u64);
    }

    pub fn bytes(&mut self, value: &[u8]) {
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value);
    }

    pub fn str(&mut self, value: &str) {
        self.bytes(value.as_bytes());
    }

    pub fn uuid(&mut self, value: &Uuid) {
        self.buf.extend_from_slice(value.as_bytes());
    }

    pub fn opt_uuid(&mut self, value: Option<&Uuid>) {
        match value {
            Some(id) => {
                self.u8(1);
                self.uuid(id);
            }
            None => self.u8(0),
        }
    }
}

/// Reads values back in the order they were written.
#[derive(Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.rest.len() < n {
            return Err(CodecError::Truncated {
                needed: n - self.rest.len(),
            });
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    pub fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    pub fn varint(&mut self) -> Result<u64, CodecError> {
        let mut value = 0u64;
        for i in 0..10 {
            let byte = self.u8()?;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(CodecError::VarintTooLong)
    }

    pub fn signed(&mut self) -> Result<i64, CodecError> {
        let raw = self.varint()?;
        Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], CodecError> {
        let len = usize::try_from(self.varint()?).unwrap_or(usize::MAX);
        self.take(len)
    }

    pub fn string(&mut self) -> Result<String, CodecError> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| CodecError::NotUtf8)
    }

    pub fn uuid(&mut self) -> Result<Uuid, CodecError> {
        let bytes = self.take(16)?;
        let mut raw = [0u8; 16];
        raw.copy_from_slice(bytes);
        Ok(Uuid::from_bytes(raw))
    }

    pub fn opt_uuid(&mut self) -> Result<Option<Uuid>, CodecError> {
        match self.u8()? {
            0 => Ok(None),
            1 => self.uuid().map(Some),
            tag => Err(CodecError::UnknownTag {
                what: "option",
                tag,
            }),
        }
    }

    /// Fails unless everything was read.
    pub fn finish(self) -> Result<(), CodecError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(CodecError::Trailing(self.rest.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn values_round_trip(a in any::<u64>(), b in any::<i64>(), s in ".{0,40}", id in any::<u128>()) {
            let mut w = Writer::default();
            w.varint(a);
            w.signed(b);
            w.str(&s);
            w.uuid(&Uuid::from_u128(id));
            let mut r = Reader::new(&w.buf);
            prop_assert_eq!(r.varint().unwrap(), a);
            prop_assert_eq!(r.signed().unwrap(), b);
            prop_assert_eq!(r.string().unwrap(), s);
            prop_assert_eq!(r.uuid().unwrap(), Uuid::from_u128(id));
            prop_assert!(r.finish().is_ok());
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut r = Reader::new(&bytes);
            let _ = r.varint();
            let _ = r.string();
            let _ = r.opt_uuid();
        }
    }

    #[test]
    fn small_numbers_take_one_byte() {
        let mut w = Writer::default();
        w.varint(127);
        w.signed(-64);
        assert_eq!(w.buf.len(), 2);
    }
}
