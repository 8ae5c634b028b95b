//! How a `CrmCommand` becomes CRM requests, in HubSpot's CRM v3 terms.
//! Pure: no I/O, so the mapping is tested on its own.
//!
//! - `log_call` creates a `calls` engagement, `add_note` a `notes` one and
//!   `create_task` a `tasks` one, each associated with the contact
//!   (HubSpot-defined association types 194, 202 and 204) and carrying the
//!   operation id as `callstream_op_id`, so a search can find it again.
//! - `update_contact` patches the contact with the properties whose fact is
//!   newer than the one already applied for that property (the others would
//!   overwrite newer data); none left means the update is stale.

use std::collections::BTreeMap;

use callstream_schemas::{CrmAction, CrmCommand};
use chrono::SecondsFormat;
use serde_json::{json, Value};

use crate::wire::CrmRequest;

/// The custom property every created object carries.
pub const OP_ID_PROPERTY: &str = "callstream_op_id";

/// What kind of write a command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Creates an engagement of `object_type`; repeating it would duplicate.
    Create {
        object_type: &'static str,
        association_type_id: u32,
    },
    /// Patches the contact; repeating it writes the same values again.
    Update,
}

/// A command this version cannot carry out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("action {0} is not supported")]
pub struct Unsupported(pub String);

/// The kind of write `action` is.
pub fn kind_of(action: CrmAction) -> Result<WriteKind, Unsupported> {
    let create = |object_type, association_type_id| {
        Ok(WriteKind::Create {
            object_type,
            association_type_id,
        })
    };
    match action {
        CrmAction::LogCall => create("calls", 194),
        CrmAction::AddNote => create("notes", 202),
        CrmAction::CreateTask => create("tasks", 204),
        CrmAction::UpdateContact => Ok(WriteKind::Update),
        other => Err(Unsupported(other.to_string())),
    }
}

/// The CRM object type a command writes.
pub fn object_type(kind: WriteKind) -> &'static str {
    match kind {
        WriteKind::Create { object_type, .. } => object_type,
        WriteKind::Update => "contacts",
    }
}

fn iso(ms: chrono::DateTime<chrono::Utc>) -> String {
    ms.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The properties of `command` newer than what was applied for them.
/// An equal fact time is not older, so it applies (the later command wins).
pub fn fresh_properties(
    applied_at: &BTreeMap<String, i64>,
    command: &CrmCommand,
) -> BTreeMap<String, String> {
    let fact = command.fact_at.timestamp_millis();
    command
        .properties
        .iter()
        .filter(|(name, _)| applied_at.get(*name).is_none_or(|&at| at <= fact))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The write for `command`; `properties` are the (fresh) contact
/// properties for an update, ignored for creates.
pub fn write_request(
    command: &CrmCommand,
    kind: WriteKind,
    properties: BTreeMap<String, String>,
) -> CrmRequest {
    match kind {
        WriteKind::Update => CrmRequest::Update {
            object_type: "contacts".into(),
            object_id: command.contact_id.clone(),
            properties,
        },
        WriteKind::Create {
            object_type,
            association_type_id,
        } => CrmRequest::Create {
            object_type: object_type.into(),
            properties: create_properties(command, object_type),
            contact_id: command.contact_id.clone(),
            association_type_id,
        },
    }
}

fn create_properties(command: &CrmCommand, object_type: &str) -> BTreeMap<String, String> {
    let mut properties = command.properties.clone();
    let mut set = |name: &str, value: Option<&String>| {
        if let Some(value) = value {
            properties.insert(name.to_owned(), value.clone());
        }
    };
    let fact_at = iso(command.fact_at);
    match object_type {
        "tasks" => {
            let due = command.due_at.map(iso).unwrap_or_else(|| fact_at.clone());
            set("hs_timestamp", Some(&due));
            set("hs_task_subject", command.subject.as_ref());
            set("hs_task_body", command.body.as_ref());
            set("hs_task_status", Some(&"NOT_STARTED".to_owned()));
            set("hubspot_owner_id", command.owner_id.as_ref());
        }
        "calls" => {
            set("hs_timestamp", Some(&fact_at));
            set("hs_call_title", command.subject.as_ref());
            set("hs_call_body", command.body.as_ref());
            set("hs_call_direction", Some(&"OUTBOUND".to_owned()));
            set("hs_call_status", Some(&"COMPLETED".to_owned()));
        }
        _ => {
            set("hs_timestamp", Some(&fact_at));
            set(
                "hs_note_body",
                command.body.as_ref().or(command.subject.as_ref()),
            );
        }
    }
    // Last, so no property of the command can replace the operation id.
    properties.insert(OP_ID_PROPERTY.to_owned(), command.operation_id.to_string());
    properties
}

/// The search that finds what a create of `command` made, if it was applied.
pub fn search_request(command: &CrmCommand, kind: WriteKind) -> CrmRequest {
    CrmRequest::Search {
        object_type: object_type(kind).into(),
        op_id: command.operation_id.to_string(),
    }
}

/// The JSON body HubSpot expects for `request`.
pub fn body(request: &CrmRequest) -> Value {
    match request {
        CrmRequest::Create {
            properties,
            contact_id,
            association_type_id,
            ..
        } => json!({
            "properties": properties,
            "associations": [{
                "to": { "id": contact_id },
                "types": [{
                    "associationCategory": "HUBSPOT_DEFINED",
                    "associationTypeId": association_type_id,
                }],
            }],
        }),
        CrmRequest::Update { properties, .. } => json!({ "properties": properties }),
        CrmRequest::Search { op_id, .. } => json!({
            "filterGroups": [{
                "filters": [{
                    "propertyName": OP_ID_PROPERTY,
                    "operator": "EQ",
                    "value": op_id,
                }],
            }],
            "properties": [OP_ID_PROPERTY],
            // Two, so a duplicate made by someone else is noticed and logged.
            "limit": 2,
        }),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
