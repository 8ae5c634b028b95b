//! Which US state(s) a lead is in, for choosing calling rules.
//!
//! Guarantees: sources are tried in a fixed order (the contact record's
//! state, the phone's area code, the tenant default) and the one used is
//! recorded, with why each earlier one was skipped. When the contact's
//! state is known and the phone's area code belongs to a different state,
//! both states are returned: a lead recorded in Georgia with a Florida
//! number gets Florida's rules too (the stricter wins, since every rule of
//! every state applies). Bad input is a skip reason, never a panic; reasons
//! never echo a phone number.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::RulesError;
use crate::area_codes::{self, AreaCodeLookup, PhoneParseError};

/// US states, DC and territories: code and name.
const STATES: [(&str, &str); 56] = [
    ("AL", "Alabama"),
    ("AK", "Alaska"),
    ("AZ", "Arizona"),
    ("AR", "Arkansas"),
    ("CA", "California"),
    ("CO", "Colorado"),
    ("CT", "Connecticut"),
    ("DE", "Delaware"),
    ("DC", "District of Columbia"),
    ("FL", "Florida"),
    ("GA", "Georgia"),
    ("HI", "Hawaii"),
    ("ID", "Idaho"),
    ("IL", "Illinois"),
    ("IN", "Indiana"),
    ("IA", "Iowa"),
    ("KS", "Kansas"),
    ("KY", "Kentucky"),
    ("LA", "Louisiana"),
    ("ME", "Maine"),
    ("MD", "Maryland"),
    ("MA", "Massachusetts"),
    ("MI", "Michigan"),
    ("MN", "Minnesota"),
    ("MS", "Mississippi"),
    ("MO", "Missouri"),
    ("MT", "Montana"),
    ("NE", "Nebraska"),
    ("NV", "Nevada"),
    ("NH", "New Hampshire"),
    ("NJ", "New Jersey"),
    ("NM", "New Mexico"),
    ("NY", "New York"),
    ("NC", "North Carolina"),
    ("ND", "North Dakota"),
    ("OH", "Ohio"),
    ("OK", "Oklahoma"),
    ("OR", "Oregon"),
    ("PA", "Pennsylvania"),
    ("RI", "Rhode Island"),
    ("SC", "South Carolina"),
    ("SD", "South Dakota"),
    ("TN", "Tennessee"),
    ("TX", "Texas"),
    ("UT", "Utah"),
    ("VT", "Vermont"),
    ("VA", "Virginia"),
    ("WA", "Washington"),
    ("WV", "West Virginia"),
    ("WI", "Wisconsin"),
    ("WY", "Wyoming"),
    ("PR", "Puerto Rico"),
    ("VI", "U.S. Virgin Islands"),
    ("GU", "Guam"),
    ("MP", "Northern Mariana Islands"),
    ("AS", "American Samoa"),
];

/// A US state, DC or territory, by its two-letter code. Written `US-FL`
/// (ISO 3166-2) in settings and events, `FL` inside rule ids.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Jurisdiction([u8; 2]);

impl Jurisdiction {
    /// Accepts `FL`, `fl`, `US-FL` or `Florida` (any case).
    pub fn parse(text: &str) -> Result<Jurisdiction, RulesError> {
        let text = text.trim();
        let upper = text.to_ascii_uppercase();
        let code = upper.strip_prefix("US-").unwrap_or(&upper);
        STATES
            .iter()
            .find(|(c, name)| *c == code || name.eq_ignore_ascii_case(text))
            .and_then(|(c, _)| <[u8; 2]>::try_from(c.as_bytes()).ok())
            .map(Jurisdiction)
            .ok_or_else(|| RulesError::BadJurisdiction(super::clip(text)))
    }

    /// The two-letter code, `FL`.
    pub fn code(&self) -> &str {
        // Built only from the ASCII table above.
        std::str::from_utf8(&self.0).unwrap_or("??")
    }
}

impl fmt::Display for Jurisdiction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "US-{}", self.code())
    }
}

impl fmt::Debug for Jurisdiction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "US-{}", self.code())
    }
}

impl TryFrom<String> for Jurisdiction {
    type Error = RulesError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        Jurisdiction::parse(&text)
    }
}

impl From<Jurisdiction> for String {
    fn from(j: Jurisdiction) -> String {
        j.to_string()
    }
}

/// Where a lead's state came from; recorded on every decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JurisdictionSource {
    /// The state on the contact record (from the CRM).
    Contact,
    /// The state of the phone number's area code.
    AreaCode,
    /// The tenant's default state.
    TenantDefault,
}

/// What we know about a lead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JurisdictionInputs<'a> {
    /// The state on the contact record, if any (`FL`, `US-FL`, `Florida`).
    pub contact_state: Option<&'a str>,
    /// The lead's phone number in any common format, if any.
    pub phone: Option<&'a str>,
    /// The tenant's default state.
    pub tenant_default: Option<&'a str>,
}

/// Why a source gave no state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JurisdictionSkipReason {
    #[error("no value")]
    Missing,
    #[error("not a US state or territory: {value:?}")]
    UnknownState { value: String },
    #[error("phone number not usable: {error}")]
    PhoneUnparseable { error: PhoneParseError },
    #[error("area code {area_code} is not geographic")]
    NonGeographicAreaCode { area_code: u16 },
    #[error("area code {area_code} is not in the table")]
    UnknownAreaCode { area_code: u16 },
    #[error("area code {area_code} is outside the US ({region})")]
    OutsideUs { area_code: u16, region: String },
}

/// A source that was tried and gave no state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JurisdictionSkip {
    pub source: JurisdictionSource,
    pub reason: JurisdictionSkipReason,
}

/// One state that applies to a lead, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JurisdictionEntry {
    pub state: Jurisdiction,
    pub source: JurisdictionSource,
}

/// The state(s) a lead is in: never empty; the first is the one the
/// resolution order chose, a second (from the area code) only when it
/// disagrees with the contact's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jurisdictions {
    pub entries: Vec<JurisdictionEntry>,
    pub skipped: Vec<JurisdictionSkip>,
}

impl Jurisdictions {
    /// Where the primary state came from.
    pub fn source(&self) -> JurisdictionSource {
        self.entries
            .first()
            .map_or(JurisdictionSource::TenantDefault, |e| e.source)
    }

    /// Every state that applies.
    pub fn states(&self) -> impl Iterator<Item = Jurisdiction> + '_ {
        self.entries.iter().map(|e| e.state)
    }

    pub fn contains(&self, state: Jurisdiction) -> bool {
        self.states().any(|s| s == state)
    }

    /// One state, from a given source (for tests and fixed settings).
    pub fn single(state: Jurisdiction, source: JurisdictionSource) -> Jurisdictions {
        Jurisdictions {
            entries: vec![JurisdictionEntry { state, source }],
            skipped: Vec::new(),
        }
    }
}

/// No source gave a state, not even the tenant default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no usable US state for the lead (tenant default missing or invalid)")]
pub struct NoJurisdiction {
    pub skipped: Vec<JurisdictionSkip>,
}

/// Resolves a lead's state(s): contact record, area code, tenant default;
/// with the area code's state added when it differs from the contact's.
pub fn resolve_jurisdictions(
    inputs: &JurisdictionInputs<'_>,
) -> Result<Jurisdictions, NoJurisdiction> {
    let mut skipped = Vec::new();
    let by_area_code = state_by_phone(inputs.phone);
    match state_by_name(inputs.contact_state) {
        Ok(state) => {
            let mut entries = vec![JurisdictionEntry {
                state,
                source: JurisdictionSource::Contact,
            }];
            if let Ok(other) = by_area_code {
                if other != state {
                    entries.push(JurisdictionEntry {
                        state: other,
                        source: JurisdictionSource::AreaCode,
                    });
                }
            }
            return Ok(Jurisdictions { entries, skipped });
        }
        Err(reason) => skipped.push(JurisdictionSkip {
            source: JurisdictionSource::Contact,
            reason,
        }),
    }
    let fallbacks = [
        (JurisdictionSource::AreaCode, by_area_code),
        (
            JurisdictionSource::TenantDefault,
            state_by_name(inputs.tenant_default),
        ),
    ];
    for (source, attempt) in fallbacks {
        match attempt {
            Ok(state) => {
                return Ok(Jurisdictions {
                    entries: vec![JurisdictionEntry { state, source }],
                    skipped,
                })
            }
            Err(reason) => skipped.push(JurisdictionSkip { source, reason }),
        }
    }
    Err(NoJurisdiction { skipped })
}

fn state_by_name(value: Option<&str>) -> Result<Jurisdiction, JurisdictionSkipReason> {
    let value = value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(JurisdictionSkipReason::Missing)?;
    Jurisdiction::parse(value).map_err(|_| JurisdictionSkipReason::UnknownState {
        value: super::clip(value),
    })
}

fn state_by_phone(phone: Option<&str>) -> Result<Jurisdiction, JurisdictionSkipReason> {
    let phone = phone.ok_or(JurisdictionSkipReason::Missing)?;
    let area_code = area_codes::area_code_of(phone)
        .map_err(|error| JurisdictionSkipReason::PhoneUnparseable { error })?;
    let code = area_code.get();
    match area_codes::lookup(area_code) {
        AreaCodeLookup::Geographic(entry) => entry
            .region
            .strip_prefix("US-")
            .and_then(|c| Jurisdiction::parse(c).ok())
            .ok_or_else(|| JurisdictionSkipReason::OutsideUs {
                area_code: code,
                region: entry.region.to_string(),
            }),
        AreaCodeLookup::NonGeographic => {
            Err(JurisdictionSkipReason::NonGeographicAreaCode { area_code: code })
        }
        AreaCodeLookup::Unknown => Err(JurisdictionSkipReason::UnknownAreaCode { area_code: code }),
    }
}
