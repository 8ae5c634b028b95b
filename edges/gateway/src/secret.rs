//! A secret's bytes (a Twilio auth token, a decoded `whsec_` key, a bearer
//! token hash) that cannot be printed by accident: `Debug` shows only that
//! a secret is there, and there is no `Display`.

use std::fmt;
use std::sync::Arc;

/// Secret bytes; cheap to clone (shared).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<[u8]>);

impl Secret {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(Arc::from(bytes.into().into_boxed_slice()))
    }

    /// The bytes, for keying a MAC. Never log them.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn debug_never_shows_the_bytes() {
        let shown = format!("{:?}", Secret::new(b"hunter2".to_vec()));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("redacted"));
    }
}
