//! Property definitions, as HubSpot's properties API keeps them
//! (`POST /crm/v3/properties/{type}`, `GET /crm/v3/properties/{type}/{name}`):
//! only what a client meets. The one rule that matters to a client that
//! must never write twice: `hasUniqueValue`, which HubSpot accepts only on
//! object types that support unique identifier properties (contacts,
//! companies, deals, tickets and custom objects; not engagements such as
//! notes, tasks and calls), and which makes the CRM itself refuse a second
//! object with the same value (see [`crate::db`]).

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::CrmError;
use crate::objects::ObjectType;

/// A property's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyDef {
    pub name: String,
    pub label: String,
    pub kind: String,
    pub field_type: String,
    pub group_name: String,
    pub has_unique_value: bool,
    pub created_at: DateTime<Utc>,
}

/// The body of a property create.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PropertyBody {
    pub name: Option<String>,
    pub label: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub field_type: Option<String>,
    pub group_name: Option<String>,
    #[serde(default)]
    pub has_unique_value: bool,
}

/// Whether HubSpot lets properties of `kind` have unique values.
pub fn supports_unique_values(kind: ObjectType) -> bool {
    matches!(
        kind,
        ObjectType::Contacts | ObjectType::Companies | ObjectType::Deals | ObjectType::Tickets
    )
}

/// Checks a property create as HubSpot does: the fields it requires, a
/// name it accepts, and `hasUniqueValue` only where the type allows it.
pub fn read_property(
    kind: ObjectType,
    body: PropertyBody,
    now: DateTime<Utc>,
) -> Result<PropertyDef, CrmError> {
    let missing = |field: &str| {
        CrmError::Validation(format!(
            "Property values were not valid: {field} is required"
        ))
    };
    let name = body.name.ok_or_else(|| missing("name"))?;
    let valid_name = !name.is_empty()
        && name.len() <= 100
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid_name {
        return Err(CrmError::Validation(
            "Property names must start with a lowercase letter and contain only lowercase \
             letters, digits and underscores"
                .into(),
        ));
    }
    if body.has_unique_value && !supports_unique_values(kind) {
        return Err(CrmError::Validation(format!(
            "Unique value properties are not supported for object type {}",
            kind.as_str()
        )));
    }
    Ok(PropertyDef {
        name,
        label: body.label.ok_or_else(|| missing("label"))?,
        kind: body.kind.ok_or_else(|| missing("type"))?,
        field_type: body.field_type.ok_or_else(|| missing("fieldType"))?,
        group_name: body.group_name.ok_or_else(|| missing("groupName"))?,
        has_unique_value: body.has_unique_value,
        created_at: now,
    })
}

impl PropertyDef {
    /// The definition as HubSpot answers it.
    pub fn to_json(&self) -> Value {
        let at = self.created_at.to_rfc3339_opts(SecondsFormat::Millis, true);
        json!({
            "name": self.name,
            "label": self.label,
            "type": self.kind,
            "fieldType": self.field_type,
            "groupName": self.group_name,
            "hasUniqueValue": self.has_unique_value,
            "createdAt": at,
            "updatedAt": at,
            "archived": false,
            "hidden": false,
            "formField": false,
            "calculated": false,
            "externalOptions": false,
            "options": [],
            "modificationMetadata": {
                "archivable": true,
                "readOnlyDefinition": false,
                "readOnlyValue": false,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(name: &str, unique: bool) -> PropertyBody {
        PropertyBody {
            name: Some(name.into()),
            label: Some("Op id".into()),
            kind: Some("string".into()),
            field_type: Some("text".into()),
            group_name: Some("callstream".into()),
            has_unique_value: unique,
        }
    }

    #[test]
    fn unique_values_only_where_hubspot_allows_them() {
        let now = callstream_platform::clock::now_utc();
        for kind in ObjectType::ALL {
            let made = read_property(kind, body("callstream_op_id", true), now);
            assert_eq!(made.is_ok(), supports_unique_values(kind), "{kind:?}");
            assert!(read_property(kind, body("callstream_op_id", false), now).is_ok());
        }
        assert!(!supports_unique_values(ObjectType::Notes));
        assert!(!supports_unique_values(ObjectType::Tasks));
        assert!(!supports_unique_values(ObjectType::Calls));
    }

    #[test]
    fn names_and_required_fields() {
        let now = callstream_platform::clock::now_utc();
        for bad in ["", "Op", "1op", "op-id", "op id"] {
            assert!(read_property(ObjectType::Deals, body(bad, false), now).is_err());
        }
        let mut b = body("op", false);
        b.group_name = None;
        assert!(read_property(ObjectType::Deals, b, now).is_err());
    }
}
