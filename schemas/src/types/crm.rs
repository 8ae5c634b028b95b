//! `crm_command.avsc` and `crm_result.avsc`: writes to the CRM and what became of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Timestamp;

avro_enum! {
    /// What a CRM command writes.
    CrmAction = "io.callstream.events.CrmAction" {
        LogCall => "log_call",
        AddNote => "add_note",
        UpdateContact => "update_contact",
        CreateTask => "create_task",
    }
}

/// One write to the CRM (`io.callstream.events.CrmCommand`, topic `crm-commands`, keyed by
/// contact). `operation_id` is the idempotency key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrmCommand {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::uuid_str")]
    pub operation_id: Uuid,
    pub contact_id: String,
    pub action: CrmAction,
    pub call_id: Option<String>,
    pub campaign_id: Option<String>,
    /// Time of the fact written: older updates of a property are skipped.
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub fact_at: Timestamp,
    /// Ordered, so equal commands encode to equal bytes.
    pub properties: BTreeMap<String, String>,
    pub subject: Option<String>,
    pub body: Option<String>,
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub due_at: Option<Timestamp>,
    pub owner_id: Option<String>,
}

avro_enum! {
    /// What happened to a CRM command.
    CrmResultStatus = "io.callstream.events.CrmResultStatus" {
        Applied => "applied",
        AlreadyApplied => "already_applied",
        SkippedStale => "skipped_stale",
        Suppressed => "suppressed",
        Shadow => "shadow",
        Failed => "failed",
    }
}

/// What happened to a CRM command (`io.callstream.events.CrmResult`, topic `crm-results`,
/// keyed by contact).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrmResult {
    #[serde(with = "crate::serde_util::uuid_str")]
    pub event_id: Uuid,
    pub tenant_id: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub occurred_at: Timestamp,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub causation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::opt_uuid_str")]
    pub correlation_id: Option<Uuid>,
    #[serde(with = "crate::serde_util::uuid_str")]
    pub operation_id: Uuid,
    pub contact_id: String,
    pub action: CrmAction,
    pub status: CrmResultStatus,
    pub crm_object_type: Option<String>,
    pub crm_object_id: Option<String>,
    pub attempts: i32,
    pub http_status: Option<i32>,
    pub error: Option<String>,
}
