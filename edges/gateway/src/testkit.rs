//! Signing helpers for tests and load generators: they produce exactly
//! what Twilio and a Standard Webhooks sender would, using the same
//! primitives the verifiers check against.

use base64::Engine as _;

use crate::verify::{standard_webhooks, twilio};

/// The `X-Twilio-Signature` value for `body` posted to `url`.
pub fn twilio_signature(auth_token: &str, url: &str, body: &[u8]) -> String {
    let params = twilio::sorted_params(body);
    let tag = twilio::sign(auth_token.as_bytes(), url, &params);
    base64::engine::general_purpose::STANDARD.encode(tag)
}

/// The `webhook-signature` value (`v1,<base64>`) for one message.
///
/// # Panics
/// If `secret` is not a `whsec_` secret: it is test input, a typo there
/// should fail the test loudly.
pub fn standard_signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = match standard_webhooks::decode_secret(secret) {
        Ok(key) => key,
        Err(e) => panic!("test secret {secret:?}: {e}"),
    };
    let tag = standard_webhooks::sign(
        key.expose(),
        id.as_bytes(),
        timestamp.to_string().as_bytes(),
        body,
    );
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(tag)
    )
}

/// A form-encoded body from pairs.
pub fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
        .into_bytes()
}
