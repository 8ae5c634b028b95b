//! Signing exactly as the real senders do, so a receiver's verifier cannot
//! tell the simulator from the platform:
//! - `X-Twilio-Signature`: base64 HMAC-SHA1, keyed with the auth token,
//!   over the full callback URL (query included) followed by every POST
//!   parameter's name and value, sorted by name (then value).
//! - Standard Webhooks: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`,
//!   keyed with the bytes of a `whsec_<base64>` secret.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;

/// The key bytes of a `whsec_<base64>` secret (the platform's one reading of them).
pub use callstream_platform::standard_webhooks::{decode_secret as decode_whsec, BadSecret};

/// The `X-Twilio-Signature` value of `params` posted to `url`.
pub fn twilio_signature(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort_unstable();
    // HMAC takes keys of any length: `new_from_slice` cannot fail here.
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(auth_token.as_bytes()) else {
        return String::new();
    };
    mac.update(url.as_bytes());
    for (name, value) in sorted {
        mac.update(name.as_bytes());
        mac.update(value.as_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

pub use callstream_platform::standard_webhooks::signature_header as standard_signature;

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Twilio's published vectors (unsorted input: the signer sorts).
    #[test]
    fn twilio_vectors() {
        let params = pairs(&[
            ("To", "+18005551212"),
            ("CallSid", "CA1234567890ABCDE"),
            ("Digits", "1234"),
            ("From", "+14158675309"),
            ("Caller", "+14158675309"),
        ]);
        let cases = [
            (
                "https://mycompany.com/myapp.php?foo=1&bar=2",
                "RSOYDt4T1cUTdK1PDd93/VVr8B8=",
            ),
            (
                "https://mycompany.com:443/myapp.php?foo=1&bar=2",
                "kvajT1Ptam85bY51eRf/AJRuM3w=",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(twilio_signature("12345", url, &params), want, "{url}");
        }
        let repeated = pairs(&[
            ("Sid", "CA123"),
            ("SidAccount", "AC123"),
            ("Digits", "5678"),
            ("Digits", "1234"),
        ]);
        assert_eq!(
            twilio_signature(
                "12345",
                "https://mycompany.com/myapp.php?foo=1&bar=2",
                &repeated
            ),
            "IK+Dwps556ElfBT0I3Rgjkr1wJU="
        );
    }

    /// The Standard Webhooks specification's vector.
    #[test]
    fn standard_webhooks_vector() {
        let key = decode_whsec("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            standard_signature(
                &key,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn bad_secrets() {
        for bad in ["", "whsec_", "whsec_!!", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] {
            assert_eq!(decode_whsec(bad), Err(BadSecret), "{bad}");
        }
    }
}
