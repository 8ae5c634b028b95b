//! What the benchmark feeds the pipeline, and what it expects back. Each phase writes
//! - launch requests on `contact-commands` (a new contact each, spread over many tenants so
//!   the scheduler's partitions share the work): the contact processor plans each with one
//!   `schedule-request`, which the scheduler decides with one `schedule-event`;
//! - accepted launches on `call-launches`, every other one followed by its completion on
//!   `call-events`: the detector reports exactly the others on `completion-missing`. Those are
//!   stamped 40 minutes back, so their window (20 minutes by default) has closed when they
//!   arrive and they are reported at once; the completed ones are stamped now, and their
//!   completion 100 ms later is well inside the window.
//!
//! Ids are derived from the phase and the record's number, so the check afterwards knows
//! every input without keeping the records.

use anyhow::{Context as _, Result};
use callstream_completion_detector::testkit::{accepted_launch, live_event};
use callstream_schemas::{
    Actor, ActorKind, ContactCommand, ContactCommandKind, ContactDetails, Event,
};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Tenants the launch requests are spread over.
pub const TENANTS: u64 = 256;
/// How far back a launch that will never complete is stamped.
const NEVER_COMPLETED_AGE_MS: i64 = 40 * 60_000;

/// The high half of every id of phase `phase` (a step or the steady phase): what it is
/// (`LR`, `LAUNCH`) and the phase.
const LAUNCH_REQUEST: u64 = 0x6c72_0000;
const LAUNCH: u64 = 0x6c61_0000;

/// What one phase wrote, for the check.
#[derive(Debug, Clone, Copy, Default)]
pub struct Written {
    pub launch_requests: u64,
    pub launches: u64,
}

/// The inputs of one phase.
#[derive(Debug, Clone, Copy)]
pub struct Phase(pub u64);

impl Phase {
    pub fn launch_request_id(self, n: u64) -> Uuid {
        Uuid::from_u64_pair(LAUNCH_REQUEST | self.0, n)
    }

    pub fn launch_id(self, n: u64) -> Uuid {
        Uuid::from_u64_pair(LAUNCH | self.0, n)
    }

    /// Whether launch `n` of this phase gets a completion.
    pub fn completed(n: u64) -> bool {
        n.is_multiple_of(2)
    }

    fn tenant(n: u64) -> String {
        format!("scale-t{}", n % TENANTS)
    }

    /// Launch request `n`: key and value.
    pub fn launch_request(self, n: u64, at: DateTime<Utc>) -> Result<(String, Vec<u8>)> {
        let contact = format!("p{}-c{n}", self.0);
        let command = ContactCommand {
            event_id: self.launch_request_id(n),
            tenant_id: Self::tenant(n),
            occurred_at: at,
            causation_id: None,
            correlation_id: None,
            kind: ContactCommandKind::LaunchRequest,
            contact_id: contact.clone(),
            actor: Actor {
                kind: ActorKind::Integration,
                id: "launch-intake".into(),
            },
            request_id: Some(format!("scale-{}-{n}", self.0)),
            campaign_id: Some("scale".into()),
            job_id: None,
            launch_id: None,
            exception_id: None,
            origin: None,
            slot: None,
            slot_at: None,
            requested_at: None,
            contact: Some(ContactDetails {
                // Chicago numbers, each its own.
                phone_number: Some(format!("+1312{:07}", n % 10_000_000)),
                time_zone: Some("America/Chicago".into()),
                ..ContactDetails::default()
            }),
            reason: None,
        };
        Ok((
            contact,
            command.encode().context("encoding a launch request")?,
        ))
    }

    /// Launch `n` (key, value, timestamp) and, when it completes, its completion.
    pub fn launch(self, n: u64, now_ms: i64) -> Result<LaunchRecords> {
        let contact = format!("p{}-d{n}", self.0);
        let id = self.launch_id(n);
        let call_sid = format!("CA{}", id.simple());
        let tenant = Self::tenant(n);
        let at_ms = if Self::completed(n) {
            now_ms
        } else {
            now_ms - NEVER_COMPLETED_AGE_MS
        };
        let launch = accepted_launch(&tenant, &contact, id, &call_sid, at_ms)
            .encode()
            .context("encoding a launch")?;
        let completion = if Self::completed(n) {
            let at = at_ms + 100;
            let event = live_event(&tenant, &contact, Some(id), &call_sid, "completed", at)
                .encode()
                .context("encoding a completion")?;
            Some((event, at))
        } else {
            None
        };
        Ok(LaunchRecords {
            contact,
            launch: (launch, at_ms),
            completion,
        })
    }
}

/// The records of one launch: its value and timestamp, and its completion's.
pub struct LaunchRecords {
    pub contact: String,
    pub launch: (Vec<u8>, i64),
    pub completion: Option<(Vec<u8>, i64)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use callstream_schemas::{CallEvent, CallLaunch};

    #[test]
    fn ids_differ_by_phase_kind_and_number() {
        let (a, b) = (Phase(1), Phase(2));
        assert_ne!(a.launch_request_id(7), b.launch_request_id(7));
        assert_ne!(a.launch_request_id(7), a.launch_id(7));
        assert_ne!(a.launch_id(7), a.launch_id(8));
    }

    #[test]
    fn every_other_launch_completes_and_the_others_are_stamped_long_ago() {
        let now = 1_800_000_000_000;
        let done = Phase(3).launch(4, now).unwrap();
        let launch = CallLaunch::decode(&done.launch.0).unwrap();
        assert_eq!(launch.launch_id, Phase(3).launch_id(4));
        let (completion, at) = done.completion.unwrap();
        assert_eq!(at, now + 100);
        assert_eq!(
            CallEvent::decode(&completion).unwrap().launch_id,
            Some(launch.launch_id)
        );
        let never = Phase(3).launch(5, now).unwrap();
        assert!(never.completion.is_none());
        assert_eq!(never.launch.1, now - NEVER_COMPLETED_AGE_MS);
    }

    #[test]
    fn a_launch_request_names_its_contact_and_tenant() {
        let (key, value) = Phase(1).launch_request(300, Utc::now()).unwrap();
        let command = ContactCommand::decode(&value).unwrap();
        assert_eq!(command.contact_id, key);
        assert_eq!(command.tenant_id, format!("scale-t{}", 300 % TENANTS));
        assert_eq!(command.kind, ContactCommandKind::LaunchRequest);
    }
}
