//! The detector's inputs and state as the benchmark writes them: accepted
//! launches and live completions (the testkit's builders, as the dispatcher
//! and the gateway write them), the join state of one open launch, and the
//! runtime's timer entries for it.

use anyhow::{Context as _, Result};
use callstream_completion_detector::state::{ContactWindows, Launch};
use callstream_completion_detector::testkit::{accepted_launch, live_event};
use callstream_runtime::partitioner::partition_for_key;
use callstream_schemas::Event;
use uuid::Uuid;

/// The detector's per-contact timer (`CONTACT_TIMER`, crate-private there).
const CONTACT_TIMER: &[u8] = b"w";

/// Tenants the contacts are spread over (the delivery monitor keeps
/// counts per tenant).
const TENANTS: u64 = 8;

pub fn tenant(n: u64) -> String {
    format!("bench-t{}", n % TENANTS)
}

/// The provider's call id of launch `id`.
pub fn call_sid(id: Uuid) -> String {
    format!("CA{}", id.simple())
}

/// An accepted launch of `contact` at `at_ms`, encoded.
pub fn launch(n: u64, contact: &str, id: Uuid, at_ms: i64) -> Result<Vec<u8>> {
    accepted_launch(&tenant(n), contact, id, &call_sid(id), at_ms)
        .encode()
        .context("encoding a launch")
}

/// The final `completed` status callback of launch `id`, encoded.
pub fn completion(n: u64, contact: &str, id: Uuid, at_ms: i64) -> Result<Vec<u8>> {
    live_event(
        &tenant(n),
        contact,
        Some(id),
        &call_sid(id),
        "completed",
        at_ms,
    )
    .encode()
    .context("encoding a completion")
}

/// The join state of a contact with one open launch, as the detector
/// stores it for the testkit's launch (same ids, strings and sizes).
pub fn open_window(n: u64, id: Uuid, at_ms: i64, window_ms: i64, grace_ms: i64) -> Vec<u8> {
    let launch = accepted_launch(&tenant(n), "", id, &call_sid(id), at_ms);
    ContactWindows {
        tenant_id: launch.tenant_id.clone(),
        launches: vec![Launch {
            launch_id: launch.launch_id,
            job_id: launch.job_id,
            event_id: launch.event_id,
            correlation_id: launch.correlation_id,
            tenant_id: launch.tenant_id,
            campaign_id: launch.campaign_id,
            provider: launch.provider,
            provider_call_id: launch.provider_call_id.unwrap_or_default(),
            accepted_at_ms: at_ms,
            window_ms,
            grace_ms,
            missing: None,
        }],
        early: Vec::new(),
        closed: Vec::new(),
    }
    .encode()
}

/// The key of the contact timer in the runtime's timer store: domain byte
/// (2, `TimeDomain::Either`: the detector keeps one timer a contact, due on
/// whichever clock passes it first), name length (u16 BE), name, timer key.
/// The runtime keeps this format private; the state phase checks that the
/// detector's own changelog holds exactly these keys before the restore
/// phase relies on them.
pub fn timer_key(contact: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(4 + contact.len());
    key.push(EITHER_DOMAIN);
    key.extend_from_slice(&(CONTACT_TIMER.len() as u16).to_be_bytes());
    key.extend_from_slice(CONTACT_TIMER);
    key.extend_from_slice(contact);
    key
}

/// The runtime's domain byte of `TimeDomain::Either`.
const EITHER_DOMAIN: u8 = 2;

/// Whether `key` is a contact-timer key (of any domain: versions before
/// `Either` kept an event-time and a wall-clock one).
pub fn is_contact_timer(key: &[u8]) -> bool {
    key.len() > 4 && key[0] <= EITHER_DOMAIN && key[1..4] == [0, 1, CONTACT_TIMER[0]]
}

/// A timer entry's value: the due time (i64 BE), no payload.
pub fn timer_value(due_ms: i64) -> [u8; 8] {
    due_ms.to_be_bytes()
}

/// Contact keys `<prefix><n>` that land on the partitions `wanted` accepts,
/// as Kafka's default partitioner places them.
pub struct Keys {
    prefix: &'static str,
    partitions: i32,
    next: u64,
}

impl Keys {
    pub fn new(prefix: &'static str, partitions: i32) -> Self {
        Self {
            prefix,
            partitions,
            next: 0,
        }
    }

    /// The next key on a partition `wanted` accepts (there must be one).
    pub fn next(&mut self, wanted: impl Fn(i32) -> bool) -> String {
        loop {
            let key = format!("{}{}", self.prefix, self.next);
            self.next += 1;
            if wanted(partition_for_key(key.as_bytes(), self.partitions)) {
                return key;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_keys_are_recognised() {
        let key = timer_key(b"c1");
        assert_eq!(key, [2, 0, 1, b'w', b'c', b'1']);
        assert!(is_contact_timer(&key));
        assert!(
            is_contact_timer(&[1, 0, 1, b'w', b'c', b'1']),
            "a legacy one"
        );
        assert!(!is_contact_timer(&[0xFF]));
        assert!(!is_contact_timer(&[0, 0, 1, b'b', b'x']));
    }

    #[test]
    fn an_open_window_decodes_to_one_open_launch() {
        let bytes = open_window(3, Uuid::from_u128(9), 1_000, 60_000, 5_000);
        let state = ContactWindows::decode(&bytes).expect("decodes");
        assert_eq!(state.launches.len(), 1);
        assert_eq!(state.launches[0].deadline_ms(), 66_000);
        assert_eq!(state.tenant_id, "bench-t3");
    }

    #[test]
    fn keys_land_where_they_are_wanted() {
        let mut keys = Keys::new("q", 12);
        for _ in 0..20 {
            let key = keys.next(|p| p == 5);
            assert_eq!(partition_for_key(key.as_bytes(), 12), 5);
        }
    }
}
