//! Calling rules beyond the federal floor: state calling hours, state legal
//! holidays and rolling frequency caps, as data with their sources.
//!
//! The statutory rules are `data/calling_rules.txt`, compiled in and parsed
//! by hand (a test checks every line). They are engineering data, not legal
//! advice: the file says so, and a tenant's counsel decides what applies.
//!
//! How the parts fit:
//! - [`resolve_jurisdictions`] finds the lead's state(s): the contact
//!   record's state, else the phone's area code, else the tenant default,
//!   recording the source. When the area code's state differs from the
//!   recorded one, both apply.
//! - [`TenantRules`] is what a tenant adds (stricter rules of its own, such
//!   as a 7-in-7-days cap) and what it switches off (an [`Override`] naming a
//!   statutory rule id, or a family such as `state_holiday:MS`, with a
//!   reason). Nothing else can remove a statutory rule.
//! - [`RuleSet::for_lead`] picks the rules for a lead; [`RuleSet::in_zones`]
//!   places the time rules (hours, holidays) in the lead's zone(s) as a
//!   [`RuleWindow`], and [`RuleSet::caps`] places the caps over the person's
//!   call history as a [`CapWindow`]. Both implement [`crate::Availability`],
//!   and [`AllOf`] intersects them with a [`crate::calling_window::CallingWindow`].
//!
//! Guarantees:
//! - Every refusal names its rule: [`Violation::rule_id`] is the row's id
//!   (`state_hours:FL`, `state_holiday:LA:mardi_gras`,
//!   `frequency_cap:FL:3_per_24h`, or `tenant:<name>`).
//! - `next_allowed(from, horizon)` returns the earliest instant at or after
//!   `from` that every rule allows (never earlier than asked), or `None`
//!   when there is none by `horizon`; `check` at that instant is `Ok`.
//! - Hours are local wall-clock times in every candidate zone of the lead,
//!   turned into instants with [`crate::timezone::resolve_local`] (as
//!   calling windows are), so DST changes are handled the same way.
//! - A holiday blocks the whole local day, on its date and on each
//!   observed date its observance rule gives (the stricter reading).
//! - A cap of N calls in a window W allows a call at `t` only if no W-long
//!   stretch would then hold more than N calls: with the person's calls
//!   in any order, a 4th call within 24 hours of the oldest of 3 is held
//!   until that oldest one has aged out (exactly 24 hours later).
//! - Parsing and checking never panic on input; bad input is a typed error.

use std::fmt;

use serde::{Deserialize, Serialize};

mod caps;
mod combine;
mod holidays;
mod hours;
mod jurisdiction;
mod ruleset;
mod table;
#[cfg(test)]
mod tests;
mod window;

pub use caps::{CapHit, CapWindow, FrequencyCap};
pub use combine::{place, AllOf, RulePlacement};
pub use holidays::{holidays_in_year, DateRule, HolidayDate, HolidaySpec, Observance, Years};
pub use hours::{DayHours, WeeklyHours};
pub use jurisdiction::{
    resolve_jurisdictions, Jurisdiction, JurisdictionEntry, JurisdictionInputs, JurisdictionSkip,
    JurisdictionSkipReason, JurisdictionSource, Jurisdictions, NoJurisdiction,
};
pub use ruleset::{Override, RuleSet, TenantRuleSpec, TenantRules};
pub use table::{statutory, table_errors, RuleTable};
pub use window::RuleWindow;

/// A rule's stable name, as events, views and overrides spell it.
///
/// Statutory: `state_hours:XX`, `state_holiday:XX:name`,
/// `frequency_cap:XX:N_per_W`; a tenant's own: `tenant:name`. Segments are
/// ASCII letters, digits and `_`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RuleId(String);

impl RuleId {
    pub fn parse(text: &str) -> Result<RuleId, RulesError> {
        let text = text.trim();
        let valid = !text.is_empty()
            && text.len() <= 96
            && text.split(':').all(|segment| {
                !segment.is_empty()
                    && segment
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
        if valid {
            Ok(RuleId(text.to_string()))
        } else {
            Err(RulesError::BadRuleId(clip(text)))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this id is `family` or lies under it (`state_holiday:MS`
    /// names every `state_holiday:MS:*`). Whole segments only.
    pub fn is_in(&self, family: &RuleId) -> bool {
        self.0 == family.0
            || (self.0.starts_with(&family.0)
                && self.0.as_bytes().get(family.0.len()) == Some(&b':'))
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for RuleId {
    type Error = RulesError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        RuleId::parse(&text)
    }
}

impl From<RuleId> for String {
    fn from(id: RuleId) -> String {
        id.0
    }
}

/// Who a rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A row of the statutory table.
    Statute,
    /// Added by the tenant (always in addition to the statutory rules).
    Tenant,
}

/// What a rule restricts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleBody {
    /// Local calling hours per weekday.
    Hours(WeeklyHours),
    /// A day with no calls at all.
    Holiday(HolidaySpec),
    /// At most N calls to a person in any rolling window.
    FrequencyCap(FrequencyCap),
}

impl RuleBody {
    pub fn kind(&self) -> &'static str {
        match self {
            RuleBody::Hours(_) => "hours",
            RuleBody::Holiday(_) => "holiday",
            RuleBody::FrequencyCap(_) => "frequency_cap",
        }
    }
}

/// One calling rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub id: RuleId,
    /// The state it protects; `None` for a tenant rule that applies to
    /// every lead.
    pub jurisdiction: Option<Jurisdiction>,
    pub body: RuleBody,
    /// The first local date it applies to; `None` if in force before the
    /// table was compiled.
    pub effective: Option<chrono::NaiveDate>,
    pub origin: Origin,
    /// The statute or regulation (empty for tenant rules).
    pub citation: String,
    /// When the row was last checked against its source.
    pub reviewed: Option<chrono::NaiveDate>,
    pub note: String,
}

/// Why an instant is refused: the rule and a short human reason (no phone
/// numbers, no names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{rule_id}: {detail}")]
pub struct Violation {
    pub rule_id: RuleId,
    pub detail: String,
}

/// A rule, table row, tenant setting or override that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    #[error("bad rule id {0:?}: expected segments of letters, digits and _ joined by ':'")]
    BadRuleId(String),
    #[error("rule id {id} does not match its kind and jurisdiction (expected it to start with {expected})")]
    IdMismatch { id: String, expected: String },
    #[error("unknown US state or territory {0:?}")]
    BadJurisdiction(String),
    #[error("unknown rule kind {0:?}: expected hours, holiday or frequency_cap")]
    BadKind(String),
    #[error("bad parameters for {kind}: {reason}")]
    BadParams { kind: &'static str, reason: String },
    #[error("bad date {0:?}: expected YYYY-MM-DD")]
    BadDate(String),
    #[error("a table row needs {expected} fields separated by '|', found {found}")]
    FieldCount { expected: usize, found: usize },
    #[error("duplicate rule id {0}")]
    Duplicate(String),
    #[error("a tenant rule is named tenant:<name>; {0:?} is not")]
    TenantRuleName(String),
    #[error("override of {0} names no statutory rule")]
    UnknownOverride(String),
    #[error("override of {0} needs a reason")]
    OverrideWithoutReason(String),
    #[error("a rule window needs at least one time zone")]
    NoZones,
}

/// At most 32 characters of `text`, for error messages.
fn clip(text: &str) -> String {
    text.chars().take(32).collect()
}
