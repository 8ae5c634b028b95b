//! The one rule every secret a service starts with must pass: no placeholder left from
//! `deploy/example.env` (anything containing `change-me`), and keys that sign or
//! authenticate requests (launch tokens, webhook signing secrets) at least
//! [`MIN_KEY_BYTES`] long. A refusal names the variable or config-file key, never the value.

/// What every placeholder in `deploy/example.env` contains (compared ignoring case).
pub const PLACEHOLDER: &str = "change-me";

/// Shortest launch token or webhook signing secret accepted: 128 bits.
pub const MIN_KEY_BYTES: usize = 16;

/// Which rules a secret is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// A credential issued by someone else (an account SID, a provider's API token):
    /// refused only when it is a placeholder, as its length is the issuer's business.
    Credential,
    /// A key we accept requests by (a bearer token, an HMAC key): also at least
    /// [`MIN_KEY_BYTES`] long.
    Key,
}

/// A secret a service must not start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {problem} (the value is not shown)")]
pub struct WeakSecret {
    /// The variable or config-file key the value came from.
    pub name: String,
    pub problem: &'static str,
}

/// Refuses a placeholder, and for [`SecretKind::Key`] a value shorter than
/// [`MIN_KEY_BYTES`]; `name` is what the error reports.
pub fn check_secret(name: &str, value: &[u8], kind: SecretKind) -> Result<(), WeakSecret> {
    let refuse = |problem| {
        Err(WeakSecret {
            name: name.to_owned(),
            problem,
        })
    };
    let placeholder = PLACEHOLDER.as_bytes();
    if value
        .windows(placeholder.len())
        .any(|window| window.eq_ignore_ascii_case(placeholder))
    {
        return refuse("is still a placeholder (see deploy/example.env); replace it");
    }
    if kind == SecretKind::Key && value.len() < MIN_KEY_BYTES {
        return refuse("is shorter than 16 bytes; use 16 random bytes or more");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_short_keys_are_refused_by_name_without_the_value() {
        let refused: [(&str, &str, SecretKind); 6] = [
            ("CALLSTREAM_LAUNCH_TOKEN", "change-me", SecretKind::Key),
            (
                "CALLSTREAM_ANALYSIS_SECRET",
                "whsec_change-me",
                SecretKind::Credential,
            ),
            ("TWILIO_AUTH_TOKEN", "ACchange-me", SecretKind::Credential),
            ("TWILIO_ACCOUNT_SID", "ACCHANGE-ME", SecretKind::Credential),
            (
                "CALLSTREAM_CRM_TOKEN",
                "pat-change-me-0123456789",
                SecretKind::Credential,
            ),
            (
                "CALLSTREAM_LAUNCH_TOKEN",
                "fifteen-bytes!!",
                SecretKind::Key,
            ),
        ];
        for (name, value, kind) in refused {
            let error = check_secret(name, value.as_bytes(), kind).unwrap_err();
            assert_eq!(error.name, name);
            let shown = error.to_string();
            assert!(shown.starts_with(name), "{shown}");
            assert!(!shown.contains(value), "{shown}");
        }
    }

    #[test]
    fn sixteen_bytes_are_enough_for_a_key_and_any_credential_but_a_placeholder_passes() {
        assert_eq!("sixteen-bytes!!!".len(), 16);
        assert_eq!(
            check_secret("T", b"sixteen-bytes!!!", SecretKind::Key),
            Ok(())
        );
        assert_eq!(check_secret("T", b"short", SecretKind::Credential), Ok(()));
    }
}
