//! The CRM commands every call outcome produces, each with an idempotency
//! key the CRM dispatcher sends as is: UUIDv5 over (tenant id, call id,
//! action) under [`CRM_COMMAND_NAMESPACE`], so a replayed outcome yields
//! the same keys and the CRM applies each action once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::normaliser::Outcome;

pub use crate::ids::namespace::CRM_COMMAND as CRM_COMMAND_NAMESPACE;

/// A command for the CRM about one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrmCommand {
    pub idempotency_key: Uuid,
    pub contact_id: String,
    pub call_id: String,
    pub action: CrmAction,
}

/// What the CRM is asked to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum CrmAction {
    LogCall {
        campaign_id: String,
        outcome: Outcome,
        occurred_at: DateTime<Utc>,
    },
    AddNote {
        summary: String,
    },
    UpdateLastOutcome {
        outcome: Outcome,
    },
    CreateFollowUpTask {
        due_at: DateTime<Utc>,
        reason: String,
    },
}

impl CrmAction {
    /// The action's name, part of its idempotency key.
    pub fn name(&self) -> &'static str {
        match self {
            CrmAction::LogCall { .. } => "log_call",
            CrmAction::AddNote { .. } => "add_note",
            CrmAction::UpdateLastOutcome { .. } => "update_last_outcome",
            CrmAction::CreateFollowUpTask { .. } => "create_follow_up_task",
        }
    }
}

/// The idempotency key of `action` for call `call_id` of tenant
/// `tenant_id`. The fields are length-prefixed, so no two different
/// triples can share their bytes.
pub fn idempotency_key(tenant_id: &str, call_id: &str, action: &str) -> Uuid {
    crate::ids::crm_command(tenant_id, call_id, action)
}

impl CrmCommand {
    /// A command with its key derived from the tenant, call and action.
    pub fn new(tenant_id: &str, contact_id: &str, call_id: &str, action: CrmAction) -> Self {
        CrmCommand {
            idempotency_key: idempotency_key(tenant_id, call_id, action.name()),
            contact_id: contact_id.to_owned(),
            call_id: call_id.to_owned(),
            action,
        }
    }
}
