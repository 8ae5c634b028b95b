//! Signing by the Standard Webhooks scheme (standardwebhooks.com), shared by everything
//! that signs or checks it: the gateway verifies what the voice platform signs, the
//! notifier signs what it sends, the voice simulator signs like the platform.
//!
//! The signature is `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` in the
//! `webhook-signature` header, beside `webhook-id` and `webhook-timestamp` (seconds);
//! secrets are written `whsec_<base64 key>`.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header names.
pub const ID: &str = "webhook-id";
pub const TIMESTAMP: &str = "webhook-timestamp";
pub const SIGNATURE: &str = "webhook-signature";

/// A `whsec_` secret that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a Standard Webhooks secret is `whsec_` followed by base64")]
pub struct BadSecret;

/// The key bytes of a `whsec_<base64>` secret.
pub fn decode_secret(text: &str) -> Result<Vec<u8>, BadSecret> {
    let encoded = text.trim().strip_prefix("whsec_").ok_or(BadSecret)?;
    let key = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| BadSecret)?;
    if key.is_empty() {
        return Err(BadSecret);
    }
    Ok(key)
}

/// The raw signature (32 bytes) of one message.
pub fn sign(key: &[u8], id: &[u8], timestamp: &[u8], body: &[u8]) -> [u8; 32] {
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        // Unreachable (HMAC takes any key length); zeros never match a real tag.
        Err(_) => return [0; 32],
    };
    mac.update(id);
    mac.update(b".");
    mac.update(timestamp);
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().into()
}

/// The `webhook-signature` value (`v1,<base64>`) of one message signed at `timestamp`
/// (seconds since the epoch).
pub fn signature_header(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let tag = sign(key, id.as_bytes(), timestamp.to_string().as_bytes(), body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(tag)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification's reference libraries.
    #[test]
    fn signs_as_the_reference_libraries_do() {
        let key = decode_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            signature_header(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert_eq!(decode_secret("nope"), Err(BadSecret));
        assert_eq!(decode_secret("whsec_"), Err(BadSecret));
    }
}
