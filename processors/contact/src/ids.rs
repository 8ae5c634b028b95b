//! Deterministic ids. Every id the contact processor mints is a UUIDv5 over
//! length-prefixed parts, so handling the same input again (a replay after
//! a crash, a rebuild from offset 0) mints the same ids, and no two
//! different part lists can share a name.

use uuid::Uuid;

/// Namespace of events and jobs the contact processor derives:
/// UUIDv5(URL, "https://callstream.dev/ns/contact-processor"). Fixed forever.
pub const CONTACT_NAMESPACE: Uuid = Uuid::from_u128(0xedaf3c4c_9eb7_5195_b63b_f72d06d948de);

/// Namespace of launch operation ids: UUIDv5(URL, "https://callstream.dev/ns/launch").
/// Fixed forever: the dispatcher's effect ledger and the provider's
/// idempotency keys are keyed by these.
pub const LAUNCH_NAMESPACE: Uuid = Uuid::from_u128(0xb134ecbd_0d15_5e18_b1f8_6834725de0e1);

fn name_of(parts: &[&[u8]]) -> Vec<u8> {
    let mut name = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum());
    for part in parts {
        name.extend_from_slice(&(part.len() as u64).to_be_bytes());
        name.extend_from_slice(part);
    }
    name
}

/// The id of what `cause` led to, named by `what` (for example
/// `schedule-request/plan` and the job id).
pub fn derived(cause: Uuid, what: &[&str]) -> Uuid {
    let mut parts: Vec<&[u8]> = Vec::with_capacity(what.len() + 1);
    parts.push(cause.as_bytes());
    parts.extend(what.iter().map(|w| w.as_bytes()));
    Uuid::new_v5(&CONTACT_NAMESPACE, &name_of(&parts))
}

/// The stable operation id of a job's launch: UUIDv5 over tenant and job id.
/// The same job can only ever launch under this one id.
pub fn launch_id(tenant_id: &str, job_id: Uuid) -> Uuid {
    let job = job_id.to_string();
    Uuid::new_v5(
        &LAUNCH_NAMESPACE,
        &name_of(&[tenant_id.as_bytes(), job.as_bytes()]),
    )
}

/// A uniform value in `[0, 1)` from an event id, for the policy's jitter:
/// a replay of the event repeats it.
pub fn jitter_of(event_id: Uuid) -> f64 {
    let bytes = derived(event_id, &["jitter"]).into_bytes();
    let mut high = [0u8; 8];
    high.copy_from_slice(&bytes[..8]);
    // 53 bits fill an f64 mantissa exactly, so the value is below 1.
    (u64::from_be_bytes(high) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_the_documented_derivations() {
        let contact = Uuid::new_v5(
            &Uuid::NAMESPACE_URL,
            b"https://callstream.dev/ns/contact-processor",
        );
        let launch = Uuid::new_v5(&Uuid::NAMESPACE_URL, b"https://callstream.dev/ns/launch");
        assert_eq!(CONTACT_NAMESPACE, contact, "{contact:x}");
        assert_eq!(LAUNCH_NAMESPACE, launch, "{launch:x}");
    }

    #[test]
    fn ids_are_stable_and_unambiguous() {
        let cause = Uuid::from_u128(42);
        let a = derived(cause, &["job", "x"]);
        assert_eq!(a, derived(cause, &["job", "x"]));
        assert_eq!(a.get_version_num(), 5);
        for other in [
            derived(cause, &["jobx"]),
            derived(cause, &["job", "x", ""]),
            derived(Uuid::from_u128(43), &["job", "x"]),
        ] {
            assert_ne!(a, other);
        }
        let job = Uuid::from_u128(7);
        assert_eq!(launch_id("t1", job), launch_id("t1", job));
        assert_ne!(launch_id("t1", job), launch_id("t2", job));
    }

    #[test]
    fn jitter_is_in_range_and_repeats() {
        for n in 0..1000u128 {
            let j = jitter_of(Uuid::from_u128(n));
            assert!((0.0..1.0).contains(&j), "{j}");
            assert_eq!(j, jitter_of(Uuid::from_u128(n)));
        }
    }
}
