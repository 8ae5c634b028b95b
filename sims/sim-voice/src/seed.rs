//! Deterministic randomness: every choice about the n-th create comes from
//! its own generator, derived from the seed and n alone, so one call's
//! draws never depend on how many draws another call made, on timing, or
//! on which faults are switched on.
//!
//! Call sids are derived too, with a salt on top that changes no choice:
//! a fixed salt gives the same sids run after run, the default (start
//! time) never reissues a sid a downstream system has already seen.

use rand::rngs::StdRng;
use rand::SeedableRng;
use sha2::{Digest, Sha256};

fn digest(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"callstream-sim-voice/v1");
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().into()
}

/// The generator of the `index`-th create.
pub fn create_rng(seed: u64, index: u64) -> StdRng {
    StdRng::from_seed(digest(&[&seed.to_le_bytes(), &index.to_le_bytes()]))
}

/// The sid of the `index`-th create: `CA` and 32 hex digits, as Twilio's.
pub fn call_sid(seed: u64, salt: u64, index: u64) -> String {
    let d = digest(&[
        b"sid",
        &seed.to_le_bytes(),
        &salt.to_le_bytes(),
        &index.to_le_bytes(),
    ]);
    let mut sid = String::with_capacity(34);
    sid.push_str("CA");
    for byte in &d[..16] {
        sid.push_str(&format!("{byte:02x}"));
    }
    sid
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_seed_same_draws_other_seed_other_draws() {
        let a: Vec<u64> = (0..4).map(|_| create_rng(7, 3).random()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            create_rng(7, 3).random::<u64>(),
            create_rng(8, 3).random::<u64>()
        );
        assert_ne!(
            create_rng(7, 3).random::<u64>(),
            create_rng(7, 4).random::<u64>()
        );
    }

    #[test]
    fn sids_look_like_twilio_and_differ() {
        let sid = call_sid(1, 2, 3);
        assert_eq!(sid.len(), 34);
        assert!(sid.starts_with("CA"));
        assert!(sid[2..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(sid, call_sid(1, 2, 3));
        assert_ne!(sid, call_sid(1, 2, 4));
        assert_ne!(sid, call_sid(1, 9, 3));
    }
}
