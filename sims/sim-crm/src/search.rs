//! `POST /crm/v3/objects/{type}/search`, as HubSpot reads it: filter groups
//! are ORed, the filters of a group ANDed; operators `EQ`, `NEQ`, `LT`,
//! `LTE`, `GT`, `GTE`, `BETWEEN`, `IN`, `NOT_IN`, `HAS_PROPERTY`,
//! `NOT_HAS_PROPERTY`, `CONTAINS_TOKEN`; `associations.contact` (and
//! `.company`, `.deal`) filters on associated ids; `sorts`, `properties`,
//! `limit` (default 10, at most 200) and `after` paging.
//!
//! Pure: matching takes the objects, paging returns indices, so the HTTP
//! layer only decides which objects search can see yet.

use std::cmp::Ordering;

use serde::Deserialize;
use serde_json::Value;

use crate::error::CrmError;
use crate::objects::CrmObject;

pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 200;
const MAX_GROUPS: usize = 5;
const MAX_FILTERS_PER_GROUP: usize = 6;
const OPERATORS: [&str; 12] = [
    "EQ",
    "NEQ",
    "LT",
    "LTE",
    "GT",
    "GTE",
    "BETWEEN",
    "IN",
    "NOT_IN",
    "HAS_PROPERTY",
    "NOT_HAS_PROPERTY",
    "CONTAINS_TOKEN",
];

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SearchBody {
    pub filter_groups: Vec<FilterGroup>,
    pub sorts: Vec<Sort>,
    pub properties: Vec<String>,
    pub limit: Option<usize>,
    pub after: Option<Value>,
    pub query: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct FilterGroup {
    pub filters: Vec<Filter>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Filter {
    pub property_name: String,
    pub operator: String,
    pub value: Option<Value>,
    pub values: Option<Vec<Value>>,
    pub high_value: Option<Value>,
}

/// `"prop"` or `{"propertyName": "prop", "direction": "DESCENDING"}`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Sort {
    Name(String),
    Full {
        #[serde(rename = "propertyName")]
        property_name: String,
        #[serde(default)]
        direction: Option<String>,
    },
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Numbers compare as numbers, anything else as text.
fn compare(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    }
}

fn value_of(f: &Filter) -> Result<String, CrmError> {
    f.value
        .as_ref()
        .and_then(text)
        .ok_or_else(|| CrmError::Validation(format!("filter on {} needs a value", f.property_name)))
}

/// Whether `o` passes one filter.
pub fn filter_matches(o: &CrmObject, f: &Filter) -> Result<bool, CrmError> {
    if let Some(target) = f.property_name.strip_prefix("associations.") {
        let ids: Vec<&str> = o
            .associations
            .iter()
            .filter(|a| a.target() == target)
            .map(|a| a.to_id.as_str())
            .collect();
        let want = value_of(f)?;
        return match f.operator.as_str() {
            "EQ" => Ok(ids.contains(&want.as_str())),
            "NEQ" => Ok(!ids.contains(&want.as_str())),
            _ => Err(CrmError::Validation(format!(
                "operator {} is not supported on associations",
                f.operator
            ))),
        };
    }
    let have = o.properties.get(&f.property_name).filter(|v| !v.is_empty());
    let ord = |want: &str| have.map(|h| compare(h, want));
    let list = || -> Result<Vec<String>, CrmError> {
        Ok(f.values
            .as_ref()
            .ok_or_else(|| CrmError::Validation("IN needs values".into()))?
            .iter()
            .filter_map(text)
            .collect())
    };
    Ok(match f.operator.as_str() {
        "EQ" => {
            let want = value_of(f)?;
            have.is_some_and(|h| *h == want)
        }
        "NEQ" => {
            let want = value_of(f)?;
            have.is_none_or(|h| *h != want)
        }
        "LT" => ord(&value_of(f)?) == Some(Ordering::Less),
        "LTE" => matches!(ord(&value_of(f)?), Some(Ordering::Less | Ordering::Equal)),
        "GT" => ord(&value_of(f)?) == Some(Ordering::Greater),
        "GTE" => matches!(
            ord(&value_of(f)?),
            Some(Ordering::Greater | Ordering::Equal)
        ),
        "BETWEEN" => {
            let high = f
                .high_value
                .as_ref()
                .and_then(text)
                .ok_or_else(|| CrmError::Validation("BETWEEN needs highValue".into()))?;
            let low = value_of(f)?;
            have.is_some_and(|h| compare(h, &low).is_ge() && compare(h, &high).is_le())
        }
        "IN" => {
            let l = list()?;
            have.is_some_and(|h| l.contains(h))
        }
        "NOT_IN" => {
            let l = list()?;
            have.is_none_or(|h| !l.contains(h))
        }
        "HAS_PROPERTY" => have.is_some(),
        "NOT_HAS_PROPERTY" => have.is_none(),
        "CONTAINS_TOKEN" => {
            let token = value_of(f)?.trim_matches('*').to_lowercase();
            have.is_some_and(|h| h.to_lowercase().contains(&token))
        }
        other => {
            return Err(CrmError::Validation(format!(
                "operator {} is not one of the supported operators",
                other.chars().take(32).collect::<String>()
            )))
        }
    })
}

impl SearchBody {
    /// Refuses what HubSpot refuses before it searches.
    pub fn check(&self) -> Result<(), CrmError> {
        if self.filter_groups.len() > MAX_GROUPS {
            return Err(CrmError::Validation(format!(
                "at most {MAX_GROUPS} filterGroups"
            )));
        }
        if self
            .filter_groups
            .iter()
            .any(|g| g.filters.len() > MAX_FILTERS_PER_GROUP)
        {
            return Err(CrmError::Validation(format!(
                "at most {MAX_FILTERS_PER_GROUP} filters in a group"
            )));
        }
        // Checked up front: an empty store must refuse what a full one would.
        let filters = self.filter_groups.iter().flat_map(|g| &g.filters);
        for f in filters {
            if !OPERATORS.contains(&f.operator.as_str()) {
                return Err(CrmError::Validation(format!(
                    "operator {} is not one of {OPERATORS:?}",
                    f.operator.chars().take(32).collect::<String>()
                )));
            }
        }
        Ok(())
    }

    pub fn matches(&self, o: &CrmObject) -> Result<bool, CrmError> {
        if let Some(q) = self.query.as_deref().filter(|q| !q.is_empty()) {
            let q = q.to_lowercase();
            if !o.properties.values().any(|v| v.to_lowercase().contains(&q)) {
                return Ok(false);
            }
        }
        if self.filter_groups.is_empty() {
            return Ok(true);
        }
        for group in &self.filter_groups {
            let mut all = true;
            for f in &group.filters {
                if !filter_matches(o, f)? {
                    all = false;
                    break;
                }
            }
            if all {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Sorts matched objects (creation order unless `sorts` says).
    pub fn sort(&self, objects: &mut [&CrmObject]) {
        objects.sort_by_key(|o| o.seq);
        let Some(sort) = self.sorts.first() else {
            return;
        };
        let (name, descending) = match sort {
            Sort::Name(n) => (n.as_str(), false),
            Sort::Full {
                property_name,
                direction,
            } => (
                property_name.as_str(),
                direction.as_deref() == Some("DESCENDING"),
            ),
        };
        objects.sort_by(|a, b| {
            let key = |o: &CrmObject| o.properties.get(name).cloned().unwrap_or_default();
            let ord = compare(&key(a), &key(b));
            if descending {
                ord.reverse()
            } else {
                ord
            }
        });
    }

    /// (offset, limit) of the page asked for.
    pub fn page(&self) -> Result<(usize, usize), CrmError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let offset = match &self.after {
            None => 0,
            Some(v) => text(v)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| CrmError::Validation("after must be a paging cursor".into()))?,
        };
        Ok((offset, limit))
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
