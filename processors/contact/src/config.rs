//! The contact processor's configuration: topic names and the few timings
//! that are not per-campaign settings (those come from `control`).

use std::time::Duration;

use callstream_platform::topics::{
    AUDIT, CALL_EVENTS, CALL_LAUNCHES, CONTACT_COMMANDS, CONTACT_STATE, CONTROL, CRM_COMMANDS,
    DEAD_LETTERS, EXCEPTIONS, LAUNCH_COMMANDS, SCHEDULE_REQUESTS,
};
use callstream_platform::Topics;
use callstream_runtime::ProcessorSpec;

/// The application id: names the consumer group, the transactional id and
/// the changelog topics.
pub const APP_ID: &str = "contact";

/// The state store holding one record per contact.
pub const CONTACTS_STORE: &str = "contacts";

/// Every store the processor declares (`Processor::stores`).
pub const STORES: &[&str] = &[CONTACTS_STORE];

/// Physical names of the topics the processor reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContactTopics {
    pub call_events: String,
    pub call_launches: String,
    pub contact_commands: String,
    pub control: String,
    pub schedule_requests: String,
    pub launch_commands: String,
    pub crm_commands: String,
    pub exceptions: String,
    pub audit: String,
    pub contact_state: String,
    pub dead_letters: String,
}

impl ContactTopics {
    pub fn new(topics: &Topics) -> Self {
        Self {
            call_events: topics.name(CALL_EVENTS),
            call_launches: topics.name(CALL_LAUNCHES),
            contact_commands: topics.name(CONTACT_COMMANDS),
            control: topics.name(CONTROL),
            schedule_requests: topics.name(SCHEDULE_REQUESTS),
            launch_commands: topics.name(LAUNCH_COMMANDS),
            crm_commands: topics.name(CRM_COMMANDS),
            exceptions: topics.name(EXCEPTIONS),
            audit: topics.name(AUDIT),
            contact_state: topics.name(CONTACT_STATE),
            dead_letters: topics.name(DEAD_LETTERS),
        }
    }
}

/// How one contact processor runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContactConfig {
    pub topics: ContactTopics,
    /// How often a job held by a pause is looked at again (wall clock);
    /// when its pause has lifted it is re-planned.
    pub pause_recheck: Duration,
    /// How long a job that comes due while another call to the contact is
    /// still in flight waits before it is tried again.
    pub in_flight_delay: Duration,
    /// How far ahead a call moved out of its window may go; with no
    /// opening before then it is cancelled.
    pub move_horizon: Duration,
    /// Finished jobs kept per contact (the newest); older ones are dropped.
    pub max_finished_jobs: usize,
    /// Event ids (and call/outcome pairs) remembered per contact for dedupe.
    pub dedupe_capacity: usize,
    /// The actor id of the processor's own actions.
    pub service_name: String,
}

impl ContactConfig {
    /// Defaults for the topics of `topics`.
    pub fn new(topics: &Topics) -> Self {
        Self {
            topics: ContactTopics::new(topics),
            pause_recheck: Duration::from_secs(60),
            in_flight_delay: Duration::from_secs(30 * 60),
            move_horizon: Duration::from_secs(14 * 24 * 3600),
            max_finished_jobs: 16,
            dedupe_capacity: callstream_domain::workflow::DEFAULT_DEDUPE_CAPACITY,
            service_name: "contact-processor".to_owned(),
        }
    }
}

/// The processor's shape: inputs `call-events`, `contact-commands` and
/// `call-launches` (the dispatcher's launch outcomes), co-partitioned by
/// contact, and the `control` table (the processor declares its `contacts`
/// store itself).
pub fn spec(topics: &Topics, app_id: &str) -> ProcessorSpec {
    ProcessorSpec::new(app_id, topics.name(DEAD_LETTERS))
        .input(topics.name(CALL_EVENTS))
        .input(topics.name(CONTACT_COMMANDS))
        .input(topics.name(CALL_LAUNCHES))
        .global_table(topics.name(CONTROL))
}
