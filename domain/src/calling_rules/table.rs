//! The statutory rules table, `data/calling_rules.txt`, compiled in.
//!
//! Guarantees: a row is kept only if every field parses and its id matches
//! its kind and jurisdiction (`state_hours:FL` for an hours row of US-FL);
//! a bad row is reported by [`table_errors`] with its line number (a test
//! keeps that empty), never a panic at run time. Ids are unique.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use chrono::NaiveDate;

use super::{
    FrequencyCap, HolidaySpec, Jurisdiction, Origin, Rule, RuleBody, RuleId, RulesError,
    WeeklyHours,
};

const TABLE: &str = include_str!("../../data/calling_rules.txt");
const FIELDS: usize = 8;

/// Rules read from a table.
#[derive(Debug, Clone, Default)]
pub struct RuleTable {
    rules: Vec<Arc<Rule>>,
    /// (line number, error) of rows that did not parse.
    rejected: Vec<(usize, RulesError)>,
}

impl RuleTable {
    /// Parses a table in the format of `data/calling_rules.txt`, keeping the
    /// good rows and recording the bad ones.
    pub fn parse(text: &str) -> RuleTable {
        let mut table = RuleTable::default();
        let mut seen = HashSet::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            match parse_row(line) {
                Ok(rule) if !seen.insert(rule.id.clone()) => table
                    .rejected
                    .push((n + 1, RulesError::Duplicate(rule.id.to_string()))),
                Ok(rule) => table.rules.push(Arc::new(rule)),
                Err(e) => table.rejected.push((n + 1, e)),
            }
        }
        table
    }

    /// Every rule, in file order.
    pub fn rules(&self) -> &[Arc<Rule>] {
        &self.rules
    }

    /// Rows that did not parse, as (line number, error).
    pub fn rejected(&self) -> &[(usize, RulesError)] {
        &self.rejected
    }

    /// The rule with this id.
    pub fn get(&self, id: &RuleId) -> Option<&Arc<Rule>> {
        self.rules.iter().find(|r| r.id == *id)
    }
}

/// The compiled-in statutory table.
pub fn statutory() -> &'static RuleTable {
    static CELL: OnceLock<RuleTable> = OnceLock::new();
    CELL.get_or_init(|| RuleTable::parse(TABLE))
}

/// Statutory rows that did not parse; empty in a good build (a test checks).
/// Exposed so a service can report it at start.
pub fn table_errors() -> &'static [(usize, RulesError)] {
    statutory().rejected()
}

/// Parses the kind and parameters of a rule (shared by the table and
/// tenant settings, so both speak one grammar).
pub(super) fn parse_body(kind: &str, params: &str) -> Result<RuleBody, RulesError> {
    match kind.trim() {
        "hours" => WeeklyHours::parse(params).map(RuleBody::Hours),
        "holiday" => HolidaySpec::parse(params).map(RuleBody::Holiday),
        "frequency_cap" => FrequencyCap::parse(params).map(RuleBody::FrequencyCap),
        other => Err(RulesError::BadKind(super::clip(other))),
    }
}

fn parse_row(line: &str) -> Result<Rule, RulesError> {
    let fields: Vec<&str> = line.split('|').map(str::trim).collect();
    let [id, jurisdiction, kind, params, effective, citation, reviewed, note] = fields[..] else {
        return Err(RulesError::FieldCount {
            expected: FIELDS,
            found: fields.len(),
        });
    };
    let id = RuleId::parse(id)?;
    let jurisdiction = Jurisdiction::parse(jurisdiction)?;
    let body = parse_body(kind, params)?;
    let prefix = match body {
        RuleBody::Hours(_) => "state_hours",
        RuleBody::Holiday(_) => "state_holiday",
        RuleBody::FrequencyCap(_) => "frequency_cap",
    };
    let family = format!("{prefix}:{}", jurisdiction.code());
    // Hours are one rule per state; holidays and caps carry a name.
    let shape_ok = match body {
        RuleBody::Hours(_) => id.as_str() == family,
        _ => id.as_str().starts_with(&format!("{family}:")),
    };
    if !shape_ok {
        return Err(RulesError::IdMismatch {
            id: id.to_string(),
            expected: family,
        });
    }
    let effective = match effective {
        "-" => None,
        text => Some(parse_date(text)?),
    };
    Ok(Rule {
        id,
        jurisdiction: Some(jurisdiction),
        body,
        effective,
        origin: Origin::Statute,
        citation: citation.to_string(),
        reviewed: Some(parse_date(reviewed)?),
        note: note.to_string(),
    })
}

fn parse_date(text: &str) -> Result<NaiveDate, RulesError> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| RulesError::BadDate(super::clip(text)))
}
