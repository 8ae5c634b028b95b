//! CRM objects as HubSpot models them: a type (`contacts`, `notes`,
//! `tasks`, ...), a numeric-looking id, string properties (with HubSpot's
//! system ones: `hs_object_id`, create and modify dates), associations,
//! and `createdAt`/`updatedAt`/`archived`.
//!
//! Like HubSpot, creates have no idempotency key: the same body sent twice
//! makes two objects. That is the point: the counts of `callstream_op_id`
//! values in [`crate::db`] show whether a client ever did it.

use std::collections::BTreeMap;
use std::time::Instant;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::CrmError;

/// The custom property clients put their operation id in.
pub const OP_ID_PROPERTY: &str = "callstream_op_id";

/// The object types the simulator holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectType {
    Contacts,
    Companies,
    Deals,
    Tickets,
    Notes,
    Tasks,
    Calls,
    Emails,
    Meetings,
}

impl ObjectType {
    pub const ALL: [ObjectType; 9] = [
        ObjectType::Contacts,
        ObjectType::Companies,
        ObjectType::Deals,
        ObjectType::Tickets,
        ObjectType::Notes,
        ObjectType::Tasks,
        ObjectType::Calls,
        ObjectType::Emails,
        ObjectType::Meetings,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ObjectType::Contacts => "contacts",
            ObjectType::Companies => "companies",
            ObjectType::Deals => "deals",
            ObjectType::Tickets => "tickets",
            ObjectType::Notes => "notes",
            ObjectType::Tasks => "tasks",
            ObjectType::Calls => "calls",
            ObjectType::Emails => "emails",
            ObjectType::Meetings => "meetings",
        }
    }

    /// One object of the type, for messages (`contact`, `ticket`).
    pub fn singular(self) -> &'static str {
        match self {
            ObjectType::Companies => "company",
            other => other.as_str().trim_end_matches('s'),
        }
    }

    /// HubSpot's object type id (`0-1` for contacts, ...).
    fn type_id(self) -> &'static str {
        match self {
            ObjectType::Contacts => "0-1",
            ObjectType::Companies => "0-2",
            ObjectType::Deals => "0-3",
            ObjectType::Tickets => "0-5",
            ObjectType::Notes => "0-46",
            ObjectType::Tasks => "0-27",
            ObjectType::Calls => "0-48",
            ObjectType::Emails => "0-49",
            ObjectType::Meetings => "0-47",
        }
    }

    /// By name or type id, as HubSpot's paths accept them.
    pub fn parse(s: &str) -> Result<Self, CrmError> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s || t.type_id() == s)
            .ok_or_else(|| CrmError::UnknownType(s.chars().take(64).collect()))
    }

    /// Contacts name their dates `createdate`; other objects `hs_createdate`.
    fn date_properties(self) -> (&'static str, &'static str) {
        match self {
            ObjectType::Contacts => ("createdate", "lastmodifieddate"),
            _ => ("hs_createdate", "hs_lastmodifieddate"),
        }
    }

    /// Properties an engagement cannot be created without.
    fn required(self) -> &'static [&'static str] {
        match self {
            ObjectType::Notes | ObjectType::Tasks => &["hs_timestamp"],
            _ => &[],
        }
    }
}

/// One association of an object to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Association {
    pub to_id: String,
    pub category: String,
    pub type_id: u32,
}

impl Association {
    /// The object type the association points at, from HubSpot's defined
    /// type ids (notes/tasks/calls/emails/meetings to companies and deals);
    /// everything else is taken to point at a contact.
    pub fn target(&self) -> &'static str {
        match self.type_id {
            190 | 192 | 182 | 186 | 188 | 280 => "company",
            214 | 216 | 206 | 210 | 212 | 4 => "deal",
            _ => "contact",
        }
    }
}

/// One object.
#[derive(Debug, Clone)]
pub struct CrmObject {
    pub id: String,
    pub kind: ObjectType,
    pub properties: BTreeMap<String, String>,
    pub associations: Vec<Association>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Creation order, for a stable search order.
    pub seq: u64,
    /// When search starts to see it (the index lag).
    pub searchable_at: Instant,
}

/// Which properties an answer shows.
#[derive(Debug, Clone, Copy)]
pub enum Shown<'a> {
    /// Every property (create and update answers).
    All,
    /// HubSpot's defaults and these (reads and searches).
    DefaultsAnd(&'a [String]),
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl CrmObject {
    pub fn new(kind: ObjectType, id: String, seq: u64, now: DateTime<Utc>, at: Instant) -> Self {
        let mut o = CrmObject {
            id: id.clone(),
            kind,
            properties: BTreeMap::new(),
            associations: Vec::new(),
            created_at: now,
            updated_at: now,
            seq,
            searchable_at: at,
        };
        let (created, _) = kind.date_properties();
        o.properties.insert("hs_object_id".into(), id);
        o.properties.insert(created.into(), iso(now));
        o.touch(now);
        o
    }

    /// Sets properties and the modify date.
    pub fn apply(&mut self, properties: BTreeMap<String, String>, now: DateTime<Utc>) {
        self.properties.extend(properties);
        self.touch(now);
    }

    fn touch(&mut self, now: DateTime<Utc>) {
        self.updated_at = now;
        let (_, modified) = self.kind.date_properties();
        self.properties.insert(modified.into(), iso(now));
    }

    pub fn op_id(&self) -> Option<&str> {
        self.properties.get(OP_ID_PROPERTY).map(String::as_str)
    }

    /// The object as HubSpot answers it.
    pub fn to_json(&self, shown: Shown<'_>, with_associations: bool) -> Value {
        let (created, modified) = self.kind.date_properties();
        let defaults = ["hs_object_id", created, modified];
        let properties: Map<String, Value> = match shown {
            Shown::All => self
                .properties
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
            Shown::DefaultsAnd(extra) => defaults
                .iter()
                .map(|s| s.to_string())
                .chain(extra.iter().cloned())
                .map(|k| {
                    let v = self
                        .properties
                        .get(&k)
                        .cloned()
                        .map_or(Value::Null, Value::String);
                    (k, v)
                })
                .collect(),
        };
        let mut out = json!({
            "id": self.id,
            "properties": properties,
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
            "archived": false,
        });
        if with_associations && !self.associations.is_empty() {
            let mut by_target: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
            for a in &self.associations {
                by_target.entry(a.target()).or_default().push(json!({
                    "id": a.to_id,
                    "type": format!("{}_to_{}", self.kind.as_str().trim_end_matches('s'), a.target()),
                }));
            }
            let map: Map<String, Value> = by_target
                .into_iter()
                .map(|(k, v)| (format!("{k}s"), json!({ "results": v })))
                .collect();
            out["associations"] = Value::Object(map);
        }
        out
    }
}

/// The body of a create or update.
#[derive(Debug, Deserialize)]
pub struct WriteBody {
    #[serde(default)]
    pub properties: Map<String, Value>,
    #[serde(default)]
    pub associations: Vec<AssociationInput>,
}

#[derive(Debug, Deserialize)]
pub struct AssociationInput {
    pub to: AssociationTo,
    #[serde(default)]
    pub types: Vec<AssociationTypeInput>,
}

#[derive(Debug, Deserialize)]
pub struct AssociationTo {
    pub id: Value,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssociationTypeInput {
    pub association_category: String,
    pub association_type_id: u32,
}

/// Property values as HubSpot stores them: strings (numbers and booleans
/// are written out, null clears).
pub fn read_properties(raw: Map<String, Value>) -> Result<BTreeMap<String, String>, CrmError> {
    raw.into_iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s,
                Value::Null => String::new(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => n.to_string(),
                Value::Array(_) | Value::Object(_) => {
                    return Err(CrmError::Validation(format!(
                        "Property values were not valid: {k} must be a string, number or boolean"
                    )))
                }
            };
            Ok((k, s))
        })
        .collect()
}

/// Checks a create: required properties and well-formed associations.
pub fn read_create(
    kind: ObjectType,
    body: WriteBody,
) -> Result<(BTreeMap<String, String>, Vec<Association>), CrmError> {
    let properties = read_properties(body.properties)?;
    for required in kind.required() {
        if properties.get(*required).is_none_or(String::is_empty) {
            return Err(CrmError::Validation(format!(
                "Property values were not valid: {required} is required"
            )));
        }
    }
    let mut associations = Vec::new();
    for a in body.associations {
        let to_id = match a.to.id {
            Value::String(s) if !s.is_empty() => s,
            Value::Number(n) => n.to_string(),
            _ => return Err(CrmError::Validation("association to.id is missing".into())),
        };
        if a.types.is_empty() {
            return Err(CrmError::Validation("association types are missing".into()));
        }
        for t in a.types {
            let known = ["HUBSPOT_DEFINED", "USER_DEFINED", "INTEGRATOR_DEFINED"];
            if !known.contains(&t.association_category.as_str()) {
                return Err(CrmError::Validation(format!(
                    "associationCategory must be one of {known:?}"
                )));
            }
            associations.push(Association {
                to_id: to_id.clone(),
                category: t.association_category,
                type_id: t.association_type_id,
            });
        }
    }
    Ok((properties, associations))
}

#[cfg(test)]
#[path = "objects_tests.rs"]
mod tests;
