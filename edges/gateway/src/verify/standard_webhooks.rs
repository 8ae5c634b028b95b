//! The Standard Webhooks scheme (standardwebhooks.com): `webhook-id`,
//! `webhook-timestamp` and `webhook-signature` headers; the signature is
//! `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, several of them
//! space-separated while a key rotates; secrets are `whsec_<base64>`.
//!
//! The signature is checked first and the timestamp after, so `Stale` is
//! only ever said of a request that really was signed (a replay or a skewed
//! clock, which the logs should tell apart from a forgery).

use std::time::Duration;

use base64::Engine as _;

use super::{ct_eq, Clock, VerifyError};
use crate::secret::Secret;

/// The spec's tolerance between the signed timestamp and our clock.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// The three signed headers, as received.
#[derive(Debug, Clone, Copy)]
pub struct SignedHeaders<'a> {
    pub id: Option<&'a [u8]>,
    pub timestamp: Option<&'a [u8]>,
    pub signature: Option<&'a [u8]>,
}

pub use callstream_platform::standard_webhooks::{sign, BadSecret};

/// Decodes a `whsec_<base64>` secret into its key bytes.
pub fn decode_secret(text: &str) -> Result<Secret, BadSecret> {
    callstream_platform::standard_webhooks::decode_secret(text).map(Secret::new)
}

/// The signed timestamp, if it is a plain decimal number of seconds.
pub fn parse_timestamp(raw: &[u8]) -> Option<i64> {
    if raw.is_empty() || raw.len() > 19 || !raw.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(raw).ok()?.parse().ok()
}

/// Verifies a message against every key; returns the signed timestamp.
pub fn verify(
    keys: &[Secret],
    headers: SignedHeaders<'_>,
    body: &[u8],
    clock: &dyn Clock,
    tolerance: Duration,
) -> Result<i64, VerifyError> {
    let (Some(id), Some(timestamp), Some(signatures)) =
        (headers.id, headers.timestamp, headers.signature)
    else {
        return Err(VerifyError::Missing);
    };
    let expected: Vec<[u8; 32]> = keys
        .iter()
        .map(|key| sign(key.expose(), id, timestamp, body))
        .collect();
    let mut matched = false;
    for candidate in signatures.split(|b| *b == b' ') {
        // Other versions (e.g. asymmetric `v1a`) are not ours to check.
        let Some(encoded) = candidate.strip_prefix(b"v1,") else {
            continue;
        };
        if encoded.len() > 48 {
            continue;
        }
        let mut presented = [0u8; 36];
        let Ok(len) =
            base64::engine::general_purpose::STANDARD.decode_slice(encoded, &mut presented)
        else {
            continue;
        };
        for tag in &expected {
            matched |= ct_eq(tag, &presented[..len]);
        }
    }
    if !matched {
        return Err(VerifyError::Mismatch);
    }
    let signed_at = parse_timestamp(timestamp).ok_or(VerifyError::Stale)?;
    let skew = clock.now_unix().abs_diff(signed_at);
    if skew > tolerance.as_secs() {
        return Err(VerifyError::Stale);
    }
    Ok(signed_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::ManualClock;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn check(
        keys: &[Secret],
        sig: Option<&str>,
        body: &[u8],
        now: i64,
    ) -> Result<i64, VerifyError> {
        let ts = TS.to_string();
        let headers = SignedHeaders {
            id: Some(ID.as_bytes()),
            timestamp: Some(ts.as_bytes()),
            signature: sig.map(str::as_bytes),
        };
        verify(
            keys,
            headers,
            body,
            &ManualClock::new(now * 1_000),
            DEFAULT_TOLERANCE,
        )
    }

    #[test]
    fn spec_vector() {
        let key = decode_secret(SECRET).unwrap();
        let tag = sign(key.expose(), ID.as_bytes(), TS.to_string().as_bytes(), BODY);
        let shown = format!(
            "v1,{}",
            base64::engine::general_purpose::STANDARD.encode(tag)
        );
        assert_eq!(shown, SIG);
        assert_eq!(check(&[key], Some(SIG), BODY, TS), Ok(TS));
    }

    struct Case<'a> {
        name: &'a str,
        keys: &'a [Secret],
        signature: Option<&'a str>,
        body: &'a [u8],
        now: i64,
        want: Result<i64, VerifyError>,
    }

    #[test]
    fn rejections_and_rotation() {
        let key = [decode_secret(SECRET).unwrap()];
        let other = [decode_secret("whsec_c2VjcmV0LW90aGVy").unwrap()];
        let both = [other[0].clone(), key[0].clone()];
        let rotated_sig = format!("v1,AAAA v1a,xyz {SIG}");
        let case = |name, keys, signature, now, want| Case {
            name,
            keys,
            signature,
            body: BODY,
            now,
            want,
        };
        let cases = [
            case("exact", &key, Some(SIG), TS, Ok(TS)),
            case(
                "old key and new key configured",
                &both,
                Some(SIG),
                TS,
                Ok(TS),
            ),
            case(
                "signature list during rotation",
                &key,
                Some(&rotated_sig),
                TS,
                Ok(TS),
            ),
            case(
                "wrong secret",
                &other,
                Some(SIG),
                TS,
                Err(VerifyError::Mismatch),
            ),
            Case {
                body: br#"{"test": 2432232315}"#,
                ..case(
                    "tampered body",
                    &key,
                    Some(SIG),
                    TS,
                    Err(VerifyError::Mismatch),
                )
            },
            case(
                "missing signature",
                &key,
                None,
                TS,
                Err(VerifyError::Missing),
            ),
            case(
                "unknown version only",
                &key,
                Some("v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="),
                TS,
                Err(VerifyError::Mismatch),
            ),
            case(
                "garbage",
                &key,
                Some("v1,@@@"),
                TS,
                Err(VerifyError::Mismatch),
            ),
            case("at the edge, past", &key, Some(SIG), TS + 300, Ok(TS)),
            case("at the edge, future", &key, Some(SIG), TS - 300, Ok(TS)),
            case("stale", &key, Some(SIG), TS + 301, Err(VerifyError::Stale)),
            case(
                "from the future",
                &key,
                Some(SIG),
                TS - 301,
                Err(VerifyError::Stale),
            ),
        ];
        for c in cases {
            assert_eq!(
                check(c.keys, c.signature, c.body, c.now),
                c.want,
                "{}",
                c.name
            );
        }
    }

    #[test]
    fn secrets() {
        assert!(decode_secret(SECRET).is_ok());
        for bad in ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_!!", ""] {
            assert_eq!(decode_secret(bad), Err(BadSecret), "{bad}");
        }
    }

    #[test]
    fn timestamps() {
        let cases: &[(&[u8], Option<i64>)] = &[
            (b"1614265330", Some(1614265330)),
            (b"0", Some(0)),
            (b"-5", None),
            (b"+5", None),
            (b"1.5", None),
            (b"", None),
            (b"99999999999999999999", None),
        ];
        for (raw, want) in cases {
            assert_eq!(parse_timestamp(raw), *want, "{raw:?}");
        }
    }
}
