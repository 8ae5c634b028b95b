//! Twilio's `X-Twilio-Signature`: base64 HMAC-SHA1, keyed with the account's
//! auth token, over the full callback URL (query included) followed by each
//! POST parameter's name and value, sorted by name (repeated names sorted by
//! value). Twilio may sign the URL with or without the scheme's default port
//! (`:443`, `:80`), so both forms are accepted, as Twilio's own libraries do.
//!
//! The form is decoded here only to rebuild the signed string; nothing in it
//! is interpreted until the signature matched.

use std::borrow::Cow;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;

use super::{ct_eq, VerifyError};
use crate::secret::Secret;

type HmacSha1 = Hmac<Sha1>;

/// Decoded form parameters, in the order Twilio signs them.
pub type Params<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;

/// Decodes an `application/x-www-form-urlencoded` body into sorted pairs.
/// Never fails: invalid percent-escapes and UTF-8 are kept lossily, which
/// can only make a signature fail to match, never match wrongly.
pub fn sorted_params(body: &[u8]) -> Params<'_> {
    let mut params: Params<'_> = form_urlencoded::parse(body).collect();
    params.sort_unstable();
    params
}

/// The raw signature (20 bytes) of `url` and already sorted `params`.
pub fn sign(token: &[u8], url: &str, params: &[(Cow<'_, str>, Cow<'_, str>)]) -> [u8; 20] {
    let mut mac = match HmacSha1::new_from_slice(token) {
        Ok(mac) => mac,
        // HMAC takes keys of any length, so this arm is unreachable; an
        // all-zero tag can never equal a real one of a random key.
        Err(_) => return [0; 20],
    };
    mac.update(url.as_bytes());
    for (name, value) in params {
        mac.update(name.as_bytes());
        mac.update(value.as_bytes());
    }
    mac.finalize().into_bytes().into()
}

/// The URL with the scheme's default port toggled: added when absent,
/// removed when present. `None` for other ports or URLs it cannot read.
pub fn with_port_toggled(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" => "443",
        "http" => "80",
        _ => return None,
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    // IPv6 literals keep their colons inside brackets.
    let port_colon = match authority.rfind(']') {
        Some(bracket) => authority[bracket..].find(':').map(|i| bracket + i),
        None => authority.rfind(':'),
    };
    let host = port_colon.map_or(authority, |colon| &authority[..colon]);
    // A host with a colon outside IPv6 brackets (or no host) is not one we
    // can read: toggling it gave a URL that did not toggle back (found by
    // the `twilio_webhook` fuzz target).
    let bracketed = host.starts_with('[') && host.ends_with(']');
    if host.is_empty() || (host.contains(':') && !bracketed) {
        return None;
    }
    match port_colon {
        None => Some(format!("{scheme}://{authority}:{default_port}{tail}")),
        Some(colon) if &authority[colon + 1..] == default_port => {
            Some(format!("{scheme}://{host}{tail}"))
        }
        Some(_) => None,
    }
}

/// Checks `header` (the `X-Twilio-Signature` value) against every token,
/// for the URL as given and with its default port toggled.
pub fn verify(
    tokens: &[Secret],
    url: &str,
    params: &[(Cow<'_, str>, Cow<'_, str>)],
    header: Option<&[u8]>,
) -> Result<(), VerifyError> {
    let header = header.ok_or(VerifyError::Missing)?;
    // A SHA-1 tag is 28 base64 characters; anything longer is not one.
    if header.len() > 32 {
        return Err(VerifyError::Mismatch);
    }
    let mut presented = [0u8; 24];
    let len = base64::engine::general_purpose::STANDARD
        .decode_slice(header.trim_ascii(), &mut presented)
        .map_err(|_| VerifyError::Mismatch)?;
    let presented = &presented[..len];
    let toggled = with_port_toggled(url);
    let urls = std::iter::once(url).chain(toggled.as_deref());
    let mut matched = false;
    for url in urls {
        for token in tokens {
            // No early exit: the time taken does not depend on which matched.
            matched |= ct_eq(&sign(token.expose(), url, params), presented);
        }
    }
    if matched {
        Ok(())
    } else {
        Err(VerifyError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &[u8] = b"12345";
    const URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
    const BODY: &[u8] = b"CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1234&From=%2B14158675309&To=%2B18005551212";

    fn b64(tag: [u8; 20]) -> String {
        base64::engine::general_purpose::STANDARD.encode(tag)
    }

    /// Twilio's published vectors.
    #[test]
    fn published_vectors() {
        let cases: &[(&str, &[u8], &str)] = &[
            (URL, BODY, "RSOYDt4T1cUTdK1PDd93/VVr8B8="),
            (
                "https://mycompany.com:443/myapp.php?foo=1&bar=2",
                BODY,
                "kvajT1Ptam85bY51eRf/AJRuM3w=",
            ),
            (
                URL,
                b"Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234",
                "IK+Dwps556ElfBT0I3Rgjkr1wJU=",
            ),
        ];
        for (url, body, want) in cases {
            let params = sorted_params(body);
            assert_eq!(b64(sign(TOKEN, url, &params)), *want, "{url}");
            let tokens = [Secret::new(TOKEN.to_vec())];
            assert_eq!(verify(&tokens, url, &params, Some(want.as_bytes())), Ok(()));
        }
    }

    #[test]
    fn either_port_form_verifies_either_signature() {
        let params = sorted_params(BODY);
        let tokens = [Secret::new(TOKEN.to_vec())];
        let with_port = "https://mycompany.com:443/myapp.php?foo=1&bar=2";
        for header in [
            "RSOYDt4T1cUTdK1PDd93/VVr8B8=",
            "kvajT1Ptam85bY51eRf/AJRuM3w=",
        ] {
            for url in [URL, with_port] {
                assert_eq!(
                    verify(&tokens, url, &params, Some(header.as_bytes())),
                    Ok(()),
                    "{url} {header}"
                );
            }
        }
    }

    #[test]
    fn rejections() {
        let good = "RSOYDt4T1cUTdK1PDd93/VVr8B8=";
        let right = [Secret::new(TOKEN.to_vec())];
        let wrong = [Secret::new(b"54321".to_vec())];
        let rotated = [Secret::new(b"old".to_vec()), Secret::new(TOKEN.to_vec())];
        let tampered = b"CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1235&From=%2B14158675309&To=%2B18005551212";
        type Case<'a> = (
            &'a str,
            &'a [Secret],
            &'a [u8],
            &'a str,
            Option<&'a str>,
            Result<(), VerifyError>,
        );
        let cases: &[Case<'_>] = &[
            ("good", &right, BODY, URL, Some(good), Ok(())),
            ("rotated: second token", &rotated, BODY, URL, Some(good), Ok(())),
            ("wrong token", &wrong, BODY, URL, Some(good), Err(VerifyError::Mismatch)),
            ("no tokens", &[], BODY, URL, Some(good), Err(VerifyError::Mismatch)),
            ("tampered body", &right, tampered, URL, Some(good), Err(VerifyError::Mismatch)),
            ("extra param", &right, b"CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1234&From=%2B14158675309&To=%2B18005551212&X=1", URL, Some(good), Err(VerifyError::Mismatch)),
            ("tampered url", &right, BODY, "https://mycompany.com/myapp.php?foo=2&bar=2", Some(good), Err(VerifyError::Mismatch)),
            ("other port", &right, BODY, "https://mycompany.com:8443/myapp.php?foo=1&bar=2", Some(good), Err(VerifyError::Mismatch)),
            ("missing header", &right, BODY, URL, None, Err(VerifyError::Missing)),
            ("not base64", &right, BODY, URL, Some("!!!"), Err(VerifyError::Mismatch)),
            ("too long", &right, BODY, URL, Some("QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB"), Err(VerifyError::Mismatch)),
        ];
        for (name, tokens, body, url, header, want) in cases {
            let params = sorted_params(body);
            let got = verify(tokens, url, &params, header.map(str::as_bytes));
            assert_eq!(got, *want, "{name}");
        }
    }

    #[test]
    fn port_toggling() {
        let cases = [
            ("https://a.com/x?y=1", Some("https://a.com:443/x?y=1")),
            ("https://a.com:443/x", Some("https://a.com/x")),
            ("http://a.com?q", Some("http://a.com:80?q")),
            ("http://a.com:80", Some("http://a.com")),
            ("https://a.com:8443/x", None),
            ("https://[::1]/x", Some("https://[::1]:443/x")),
            ("https://[::1]:443/x", Some("https://[::1]/x")),
            ("ftp://a.com/x", None),
            ("no scheme", None),
            ("https:///x", None),
            // Not hosts: a colon outside brackets, or nothing before the port.
            ("https://a.com:443b.com:443/x", None),
            ("https://:443/x", None),
            ("https://[::1]x:443/x", None),
        ];
        for (url, want) in cases {
            assert_eq!(with_port_toggled(url).as_deref(), want, "{url}");
        }
    }
}
