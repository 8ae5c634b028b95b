//! Which time zone a lead lives in, and how a wall-clock time there becomes
//! an instant.
//!
//! Guarantees:
//! - [`resolve_zone`] tries the sources in a fixed order (the contact's own
//!   zone, the zone the voice platform reported, the phone number's area
//!   code, the tenant default) and records which one it used
//!   ([`ZoneSource`]) and why each earlier one was skipped. A bad zone name
//!   or phone number is skipped with its reason, never a panic.
//! - [`resolve_local`] maps every local date-time to exactly one instant,
//!   also inside DST changes: a time in a spring-forward gap becomes the
//!   first valid instant after the gap (the moment the clocks jump), and a
//!   time in a fall-back overlap becomes the earlier of its two instants.
//!   Callback times and calling windows both use it, so they agree.

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use crate::area_codes::{self, AreaCodeLookup, PhoneParseError};

#[cfg(test)]
mod tests;

/// Where a lead's zone came from; recorded on every job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZoneSource {
    /// The zone stored on the contact record.
    Contact,
    /// The zone the voice platform reported for the number.
    VoicePlatform,
    /// The NANP area code of the phone number (may give several zones).
    AreaCode,
    /// The tenant's default zone.
    TenantDefault,
}

impl ZoneSource {
    /// The resolution order, first to last.
    pub const ORDER: [ZoneSource; 4] = [
        ZoneSource::Contact,
        ZoneSource::VoicePlatform,
        ZoneSource::AreaCode,
        ZoneSource::TenantDefault,
    ];

    /// The stable name used in events and views.
    pub fn as_str(self) -> &'static str {
        match self {
            ZoneSource::Contact => "contact",
            ZoneSource::VoicePlatform => "voice_platform",
            ZoneSource::AreaCode => "area_code",
            ZoneSource::TenantDefault => "tenant_default",
        }
    }
}

impl std::fmt::Display for ZoneSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What we know about a lead, as the contact processor holds it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZoneInputs<'a> {
    /// IANA name stored on the contact, if any.
    pub contact_zone: Option<&'a str>,
    /// IANA name reported by the voice platform, if any.
    pub platform_zone: Option<&'a str>,
    /// The lead's phone number in any common format, if any.
    pub phone: Option<&'a str>,
    /// The tenant's default IANA zone name.
    pub tenant_default: Option<&'a str>,
}

/// Why a source was passed over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkipReason {
    /// The source had no value.
    #[error("no value")]
    Missing,
    /// The value is not an IANA zone name chrono-tz knows.
    #[error("unknown time zone name {name:?}")]
    InvalidZoneName { name: String },
    /// The phone number could not be read as a NANP number.
    #[error("phone number not usable: {error}")]
    PhoneUnparseable { error: PhoneParseError },
    /// The area code is toll-free or otherwise not tied to a place.
    #[error("area code {area_code} is not geographic")]
    NonGeographicAreaCode { area_code: u16 },
    /// The area code is not in our table (not in service, or new).
    #[error("area code {area_code} is not in the table")]
    UnknownAreaCode { area_code: u16 },
}

/// One source that was tried and skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedSource {
    pub source: ZoneSource,
    pub reason: SkipReason,
}

/// The zone(s) a lead is in, where they came from, and what was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ResolvedZoneRecord")]
pub struct ResolvedZone {
    /// Never empty. Several only when an area code spans zones; the first is
    /// the primary zone (spoken times are read in it).
    #[serde(with = "serde_tz_vec")]
    pub zones: Vec<Tz>,
    pub source: ZoneSource,
    /// The earlier sources, each with the reason it was not used.
    pub skipped: Vec<SkippedSource>,
}

impl ResolvedZone {
    /// The zone spoken times are read in.
    pub fn primary(&self) -> Tz {
        // `zones` is never empty (resolution and deserialisation both
        // check), so the UTC default is unreachable.
        self.zones.first().copied().unwrap_or(Tz::UTC)
    }
}

/// A stored [`ResolvedZone`] before it is checked to have a zone.
#[derive(Deserialize)]
struct ResolvedZoneRecord {
    #[serde(with = "serde_tz_vec")]
    zones: Vec<Tz>,
    source: ZoneSource,
    #[serde(default)]
    skipped: Vec<SkippedSource>,
}

impl TryFrom<ResolvedZoneRecord> for ResolvedZone {
    type Error = &'static str;
    fn try_from(r: ResolvedZoneRecord) -> Result<Self, Self::Error> {
        if r.zones.is_empty() {
            return Err("a resolved zone needs at least one zone");
        }
        Ok(ResolvedZone {
            zones: r.zones,
            source: r.source,
            skipped: r.skipped,
        })
    }
}

/// No source gave a usable zone, not even the tenant default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no usable time zone (tenant default missing or invalid)")]
pub struct NoUsableZone {
    pub skipped: Vec<SkippedSource>,
}

/// Resolves a lead's zone: contact, voice platform, area code, tenant default.
pub fn resolve_zone(inputs: &ZoneInputs<'_>) -> Result<ResolvedZone, NoUsableZone> {
    let mut skipped = Vec::new();
    for source in ZoneSource::ORDER {
        let attempt = match source {
            ZoneSource::Contact => zone_by_name(inputs.contact_zone),
            ZoneSource::VoicePlatform => zone_by_name(inputs.platform_zone),
            ZoneSource::AreaCode => zones_by_phone(inputs.phone),
            ZoneSource::TenantDefault => zone_by_name(inputs.tenant_default),
        };
        match attempt {
            Ok(zones) => {
                return Ok(ResolvedZone {
                    zones,
                    source,
                    skipped,
                })
            }
            Err(reason) => skipped.push(SkippedSource { source, reason }),
        }
    }
    Err(NoUsableZone { skipped })
}

/// Parses an IANA zone name (surrounding whitespace ignored).
pub fn parse_zone(name: &str) -> Result<Tz, SkipReason> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return Err(SkipReason::Missing);
    }
    trimmed
        .parse::<Tz>()
        .map_err(|_| SkipReason::InvalidZoneName {
            name: trimmed.chars().take(64).collect(),
        })
}

fn zone_by_name(name: Option<&str>) -> Result<Vec<Tz>, SkipReason> {
    parse_zone(name.ok_or(SkipReason::Missing)?).map(|tz| vec![tz])
}

fn zones_by_phone(phone: Option<&str>) -> Result<Vec<Tz>, SkipReason> {
    let phone = phone.ok_or(SkipReason::Missing)?;
    let area_code =
        area_codes::area_code_of(phone).map_err(|error| SkipReason::PhoneUnparseable { error })?;
    match area_codes::lookup(area_code) {
        AreaCodeLookup::Geographic(entry) => Ok(entry.zones.clone()),
        AreaCodeLookup::NonGeographic => Err(SkipReason::NonGeographicAreaCode {
            area_code: area_code.get(),
        }),
        AreaCodeLookup::Unknown => Err(SkipReason::UnknownAreaCode {
            area_code: area_code.get(),
        }),
    }
}

/// The instant a local wall-clock time in `tz` denotes.
///
/// Deterministic inside DST changes: a time that does not exist (spring-forward
/// gap) becomes the first valid instant after the gap, i.e. the moment of the
/// jump (02:30 on the spring-forward day in Chicago is 03:00 CDT); a time
/// that exists twice (fall-back overlap) becomes the earlier instant (01:30
/// on the fall-back day in Chicago is 01:30 CDT, not CST).
pub fn resolve_local(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(a, b) => a.min(b).with_timezone(&Utc),
        LocalResult::None => first_instant_after_gap(tz, local),
    }
}

/// The first instant whose wall clock in `tz` is at or after `local`, for a
/// `local` inside a gap. Steps whole minutes to the end of the gap (gaps end
/// on whole minutes in every tz rule since 1970; Samoa's 2011 gap, a whole
/// day, is the longest), then walks back second by second to be exact for
/// older rules.
fn first_instant_after_gap(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    let minute = TimeDelta::minutes(1);
    let start = local - TimeDelta::seconds(i64::from(chrono::Timelike::second(&local)));
    let mut probe = start;
    // Two days of minutes bounds the walk whatever the rule.
    for _ in 0..(2 * 24 * 60) {
        probe += minute;
        let found = match tz.from_local_datetime(&probe) {
            LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
            LocalResult::Ambiguous(a, b) => Some(a.min(b).with_timezone(&Utc)),
            LocalResult::None => None,
        };
        if let Some(mut instant) = found {
            // Walk back while the previous second still reads at or after `local`.
            for _ in 0..60 {
                let earlier = instant - TimeDelta::seconds(1);
                if earlier.with_timezone(&tz).naive_local() >= local {
                    instant = earlier;
                } else {
                    break;
                }
            }
            return instant;
        }
    }
    // Unreachable with real tz data; reading the time as UTC is still an answer.
    local.and_utc()
}

/// `#[serde(with = "serde_tz")]` for a [`Tz`], as its IANA name.
pub mod serde_tz {
    use chrono_tz::Tz;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(tz: &Tz, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(tz.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Tz, D::Error> {
        let name = String::deserialize(d)?;
        name.parse::<Tz>()
            .map_err(|_| D::Error::custom(format!("unknown time zone {name:?}")))
    }
}

/// `#[serde(with = "serde_tz_vec")]` for a `Vec<Tz>`, as IANA names.
pub mod serde_tz_vec {
    use chrono_tz::Tz;
    use serde::{de::Error, ser::SerializeSeq, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(zones: &[Tz], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(zones.len()))?;
        for tz in zones {
            seq.serialize_element(tz.name())?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Tz>, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        names
            .iter()
            .map(|name| {
                name.parse::<Tz>()
                    .map_err(|_| D::Error::custom(format!("unknown time zone {name:?}")))
            })
            .collect()
    }
}
