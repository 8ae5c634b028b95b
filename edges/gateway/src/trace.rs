//! W3C `traceparent` for the Kafka headers: the caller's trace continued
//! with a new span id when it sent a valid one, a new trace otherwise. An
//! invalid header is replaced, never refused: tracing must not cost a
//! webhook.

use std::fmt::Write as _;

/// The `traceparent` value to put on the record.
pub fn child_of(incoming: Option<&[u8]>) -> String {
    let span: u64 = nonzero(rand::random());
    match incoming.and_then(parse) {
        Some((trace, flags)) => format_traceparent(trace, span, flags),
        None => format_traceparent(nonzero(rand::random()), span, 0x01),
    }
}

fn nonzero<T: Default + PartialEq + From<u8>>(v: T) -> T {
    // All-zero ids are invalid in the spec; the chance is 2^-64, but cheap to rule out.
    if v == T::default() {
        T::from(1)
    } else {
        v
    }
}

fn format_traceparent(trace: u128, span: u64, flags: u8) -> String {
    let mut out = String::with_capacity(55);
    let _ = write!(out, "00-{trace:032x}-{span:016x}-{flags:02x}");
    out
}

/// `(trace id, flags)` of a valid version-00 header.
pub fn parse(raw: &[u8]) -> Option<(u128, u8)> {
    let text = std::str::from_utf8(raw).ok()?.trim();
    let mut parts = text.split('-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || version != "00" {
        return None;
    }
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !(hex(trace, 32) && hex(parent, 16) && hex(flags, 2)) {
        return None;
    }
    let trace_id = u128::from_str_radix(trace, 16).ok()?;
    let parent_id = u64::from_str_radix(parent, 16).ok()?;
    if trace_id == 0 || parent_id == 0 {
        return None;
    }
    Some((trace_id, u8::from_str_radix(flags, 16).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn continues_a_valid_trace() {
        let child = child_of(Some(GOOD.as_bytes()));
        assert_eq!(child.len(), 55);
        assert!(child.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
        assert!(child.ends_with("-01"));
        assert_ne!(child, GOOD);
        assert!(parse(child.as_bytes()).is_some());
    }

    #[test]
    fn replaces_an_invalid_one() {
        let cases = [
            "",
            "garbage",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ];
        for bad in cases {
            assert_eq!(parse(bad.as_bytes()), None, "{bad}");
            let fresh = child_of(Some(bad.as_bytes()));
            assert!(parse(fresh.as_bytes()).is_some(), "{fresh}");
            assert!(!fresh.contains("4bf92f3577b34da6"), "{fresh}");
        }
    }
}
