//! The calls placed to each number, per tenant: what the frequency caps count across
//! contacts. Launch commands are keyed by tenant and number
//! ([`callstream_kit::keys::phone_key`]), so every launch to one number meets on one
//! partition, and this store (changelogged like the ledger) sees every call the provider
//! accepted for it, whichever contact or campaign it was for. The contact processor's own
//! count (on the command) covers the lead's calls to numbers it had before; the last hop
//! counts both.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use callstream_kit::calling_rules::{keep_countable, CapSubject, PLACED_CALLS_KEPT};

use crate::ledger::Launch;

/// The store of calls per number.
pub const NUMBERS_STORE: &str = "numbers";
/// The wall-clock timer that forgets a number once its newest call is older than any cap.
pub const FORGET_TIMER: &str = "forget-number";

/// One call the provider accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumberCall {
    pub launch_id: Uuid,
    pub contact_id: String,
    pub campaign_id: String,
    pub at_ms: i64,
}

/// The calls placed to one number of one tenant, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumberCalls {
    pub calls: Vec<NumberCall>,
}

/// How long calls are kept, in ms.
pub fn kept_ms() -> i64 {
    PLACED_CALLS_KEPT.num_milliseconds()
}

impl NumberCalls {
    /// Records the call `launch` placed (once per launch), and forgets what no cap can
    /// count any more.
    pub fn record(&mut self, launch: &Launch, at_ms: i64) {
        if self.calls.iter().any(|c| c.launch_id == launch.launch_id) {
            return;
        }
        self.calls.push(NumberCall {
            launch_id: launch.launch_id,
            contact_id: launch.contact_id.clone(),
            campaign_id: launch.campaign_id.clone(),
            at_ms,
        });
        keep_countable(&mut self.calls, |c| c.at_ms);
    }

    /// Drops calls placed before `ms`.
    pub fn forget_before(&mut self, ms: i64) {
        self.calls.retain(|c| c.at_ms >= ms);
    }

    /// When the newest call was placed.
    pub fn newest_ms(&self) -> Option<i64> {
        self.calls.last().map(|c| c.at_ms)
    }

    /// Every call placed to the person `launch` calls, within `subject`, oldest first: the
    /// contact's own count on the command (which covers numbers the lead had before),
    /// the calls to this number for other contacts, and the contact's own calls to it
    /// that its count does not hold yet. Both sides stamp a call with the `call-launch`'s
    /// time, so the contact's calls are matched by instant, as multisets: two calls in
    /// one millisecond count twice.
    pub fn placed_with(&self, subject: CapSubject, launch: &Launch) -> Vec<i64> {
        let mut contacts = launch.placed_calls_ms.clone();
        contacts.sort_unstable();
        let mut unmatched = contacts.clone();
        let mut all = contacts;
        for call in self
            .calls
            .iter()
            .filter(|c| subject == CapSubject::Tenant || c.campaign_id == launch.campaign_id)
        {
            if call.contact_id == launch.contact_id {
                if let Ok(i) = unmatched.binary_search(&call.at_ms) {
                    unmatched.remove(i);
                    continue;
                }
            }
            all.push(call.at_ms);
        }
        all.sort_unstable();
        all
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use callstream_kit::calling_rules::MAX_PLACED_CALLS;

    fn launch(n: u128, contact: &str, campaign: &str, placed: Vec<i64>) -> Launch {
        Launch {
            launch_id: Uuid::from_u128(n),
            command_id: Uuid::from_u128(1_000 + n),
            correlation_id: None,
            traceparent: None,
            tenant_id: "acme".into(),
            job_id: Uuid::from_u128(2_000 + n),
            contact_id: contact.into(),
            campaign_id: campaign.into(),
            to: "+13055550100".into(),
            from: None,
            provider: None,
            expires_at_ms: None,
            slot_ends_at_ms: None,
            time_zone: None,
            jurisdictions: Vec::new(),
            placed_calls_ms: placed,
        }
    }

    #[test]
    fn a_call_counts_once_per_launch_and_ages_out() {
        let day = 86_400_000;
        let mut calls = NumberCalls::default();
        calls.record(&launch(1, "c1", "a", vec![]), 0);
        calls.record(&launch(1, "c1", "a", vec![]), 5);
        calls.record(&launch(2, "c2", "b", vec![]), day);
        let next = launch(99, "c9", "a", vec![]);
        assert_eq!(calls.placed_with(CapSubject::Tenant, &next), vec![0, day]);
        assert_eq!(calls.placed_with(CapSubject::Campaign, &next), vec![0]);
        // 31 days are kept: the call of day 1 still counts on day 32, not on day 33.
        calls.record(&launch(3, "c1", "a", vec![]), 32 * day);
        assert_eq!(
            calls.placed_with(CapSubject::Tenant, &next),
            vec![day, 32 * day]
        );
        calls.record(&launch(4, "c1", "a", vec![]), 33 * day);
        assert_eq!(
            calls.placed_with(CapSubject::Tenant, &next),
            vec![32 * day, 33 * day]
        );
        for n in 0..100 {
            calls.record(
                &launch(10 + n, "c1", "a", vec![]),
                34 * day + i64::try_from(n).unwrap(),
            );
        }
        assert_eq!(calls.calls.len(), MAX_PLACED_CALLS);
        assert_eq!(calls.newest_ms(), Some(34 * day + 99));
    }

    #[test]
    fn the_contacts_count_and_the_numbers_merge_without_double_counting() {
        let mut calls = NumberCalls::default();
        // Two contacts' calls in the same millisecond both count.
        calls.record(&launch(1, "c1", "a", vec![]), 30);
        calls.record(&launch(2, "c2", "a", vec![]), 30);
        calls.record(&launch(3, "c1", "a", vec![]), 40);
        // c1 knows of its call at 30 and one at 10 to a number it had before; its call
        // at 40 has not reached its count yet.
        let c1 = launch(9, "c1", "a", vec![10, 30]);
        assert_eq!(
            calls.placed_with(CapSubject::Campaign, &c1),
            vec![10, 30, 30, 40]
        );
        let c3 = launch(9, "c3", "a", vec![]);
        assert_eq!(
            calls.placed_with(CapSubject::Campaign, &c3),
            vec![30, 30, 40]
        );
    }
}
