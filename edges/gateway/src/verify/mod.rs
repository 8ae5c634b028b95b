//! Signature verification, over the raw request bytes, before anything in
//! the request is parsed or trusted.
//!
//! Guarantees: every comparison of a secret-derived value is constant time
//! (`subtle`), no input makes a verifier panic, and a verifier answers only
//! "valid", "invalid" or "stale": it never says which secret or which part
//! of the signature was wrong.

pub mod standard_webhooks;
pub mod twilio;

/// The workspace's one clock: signed timestamps are checked against it (tests pin a
/// `ManualClock`).
pub use callstream_platform::clock::{Clock, ManualClock, SystemClock};

use subtle::ConstantTimeEq;

/// Why a request was not accepted as signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A signature header (or one of the headers it covers) is absent.
    #[error("signature header missing")]
    Missing,
    /// No configured secret produces any of the presented signatures.
    #[error("signature does not match")]
    Mismatch,
    /// Correctly signed, but the signed timestamp is outside the tolerance
    /// (a replay, or a sender whose clock is off).
    #[error("signed timestamp outside the tolerance")]
    Stale,
}

/// Constant-time equality of two byte strings. Lengths are not secret
/// (every signature of a scheme has the same length), contents are.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    use super::ct_eq;

    #[test]
    fn ct_eq_is_plain_equality() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"", b"", true),
            (b"abc", b"abc", true),
            (b"abc", b"abd", false),
            (b"abc", b"ab", false),
            (b"", b"a", false),
        ];
        for (a, b, want) in cases {
            assert_eq!(ct_eq(a, b), *want, "{a:?} vs {b:?}");
        }
    }
}
