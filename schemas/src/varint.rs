//! Avro's zig-zag varint (how it writes int and long), read from the front of a byte slice:
//! one reader for the structural scan, the direct decoder and the detector's field reader.

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The bytes end inside it.
    Truncated,
    /// More than 10 bytes, more than a 64-bit value takes.
    TooLong,
}

/// The long at the start of `buf` and how many bytes it took (1 to 10).
#[inline]
pub fn read_long(buf: &[u8]) -> Result<(i64, usize), VarintError> {
    let mut raw: u64 = 0;
    for i in 0..10 {
        let byte = *buf.get(i).ok_or(VarintError::Truncated)?;
        raw |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((((raw >> 1) as i64) ^ -((raw & 1) as i64), i + 1));
        }
    }
    Err(VarintError::TooLong)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_encoder_writes() {
        for n in [
            0,
            1,
            -1,
            63,
            -64,
            64,
            i64::from(i32::MAX),
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = Vec::new();
            crate::encode::long(n, &mut out);
            out.push(0xAA); // what follows is not read
            assert_eq!(read_long(&out), Ok((n, out.len() - 1)), "{n}");
        }
    }

    #[test]
    fn refuses_a_cut_or_overlong_varint() {
        assert_eq!(read_long(&[]), Err(VarintError::Truncated));
        assert_eq!(read_long(&[0x80, 0x80]), Err(VarintError::Truncated));
        assert_eq!(read_long(&[0xFF; 11]), Err(VarintError::TooLong));
    }
}
