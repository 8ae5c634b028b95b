//! NANP phone numbers and the time zones their area codes cover.
//!
//! The table is `data/nanp_area_codes.txt`, compiled into the binary: every
//! geographic area code of the US (states, DC, territories), Canada and the
//! Caribbean NANP countries, each with all the IANA zones a number in it may
//! be in (several for codes that span a zone line). A test checks every line
//! parses and every zone name is known, so a bad edit fails the build's
//! tests rather than a lookup at run time.
//!
//! Sources: the NANPA area-code assignments by state and province and the
//! US and Canadian time-zone boundaries, cross-checked against
//! libphonenumber's geocoding and time-zone data (Google, Apache-2.0).
//! `cargo xtask area-codes` refreshes that check: it installs the pinned
//! Python port `phonenumbers` and runs `data/refresh_area_codes.py`, which
//! prints each difference as a JSON line; `--check` fails on a code we lack
//! or a region that differs, `--write` appends the missing codes to the
//! table. The table's header says which differences are deliberate.
//!
//! Parsing accepts E.164 (`+13125550100`) and the usual US ways of writing a
//! number (`(312) 555-0100`, `312.555.0100`, `1-312-555-0100`, `tel:` URIs,
//! a trailing extension). Errors never echo the number: phone numbers stay
//! out of logs.

use std::sync::OnceLock;

use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

const TABLE: &str = include_str!("../data/nanp_area_codes.txt");

/// Area codes that are valid NANP codes but name no place: toll-free,
/// personal (5XX), Canadian non-geographic, government, premium, and the
/// 88X toll-free expansion reserve.
pub const NON_GEOGRAPHIC: &[u16] = &[
    456, 500, 521, 522, 523, 524, 525, 526, 527, 528, 529, 532, 533, 535, 538, 542, 543, 544, 545,
    546, 547, 549, 550, 552, 553, 554, 556, 558, 566, 569, 577, 588, 589, 600, 622, 633, 700, 710,
    800, 822, 833, 844, 855, 866, 877, 880, 881, 882, 883, 884, 885, 886, 887, 888, 889, 900,
];

/// A NANP area code (NPA): three digits, the first 2-9.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "u16", into = "u16")]
pub struct AreaCode(u16);

impl AreaCode {
    /// Checks the NANP shape: `NXX` with N in 2-9, and not an `N11` service code.
    pub fn new(code: u16) -> Option<AreaCode> {
        let valid = (200..=999).contains(&code) && code % 100 != 11;
        valid.then_some(AreaCode(code))
    }

    pub fn get(self) -> u16 {
        self.0
    }
}

impl TryFrom<u16> for AreaCode {
    type Error = PhoneParseError;
    fn try_from(code: u16) -> Result<Self, Self::Error> {
        AreaCode::new(code).ok_or(PhoneParseError::InvalidAreaCode)
    }
}

impl From<AreaCode> for u16 {
    fn from(code: AreaCode) -> u16 {
        code.0
    }
}

impl std::fmt::Display for AreaCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:03}", self.0)
    }
}

/// A NANP number split into its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NanpNumber {
    pub area_code: AreaCode,
    /// The central-office code (NXX).
    pub exchange: u16,
    /// The last four digits.
    pub line: u16,
}

impl NanpNumber {
    /// The number in E.164 form, `+1NPANXXXXXX`.
    pub fn e164(&self) -> String {
        format!(
            "+1{:03}{:03}{:04}",
            self.area_code.0, self.exchange, self.line
        )
    }
}

/// Why a string is not a NANP number. Never carries the number itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum PhoneParseError {
    #[error("no digits")]
    Empty,
    #[error("character not allowed in a phone number")]
    InvalidCharacter,
    #[error("country code is not +1 (not a NANP number)")]
    NotNanp,
    #[error("wrong number of digits: {digits}")]
    WrongLength { digits: usize },
    #[error("area code is not a valid NANP area code")]
    InvalidAreaCode,
    #[error("exchange code is not valid (must start with 2-9)")]
    InvalidExchange,
}

/// Parses E.164 and common US/Canadian formats into a [`NanpNumber`].
pub fn parse_nanp(input: &str) -> Result<NanpNumber, PhoneParseError> {
    let mut text = input.trim();
    if let Some(rest) = text.strip_prefix("tel:") {
        text = rest;
    }
    let text = strip_extension(text);
    let plus = text.starts_with('+');
    let mut digits = Vec::with_capacity(12);
    for (i, c) in text.char_indices() {
        match c {
            '0'..='9' => digits.push(c as u8 - b'0'),
            '+' if i == 0 => {}
            ' ' | '-' | '.' | '(' | ')' | '/' | '\u{a0}' => {}
            _ => return Err(PhoneParseError::InvalidCharacter),
        }
    }
    if digits.is_empty() {
        return Err(PhoneParseError::Empty);
    }
    // "011" is the NANP international prefix: the number is abroad.
    if digits.starts_with(&[0, 1, 1]) && !plus {
        return Err(PhoneParseError::NotNanp);
    }
    let national: &[u8] = match (plus, digits.len()) {
        (true, _) if digits[0] != 1 => return Err(PhoneParseError::NotNanp),
        (true, 11) => &digits[1..],
        (false, 11) if digits[0] == 1 => &digits[1..],
        (false, 10) => &digits[..],
        (_, n) => return Err(PhoneParseError::WrongLength { digits: n }),
    };
    let number = |range: std::ops::Range<usize>| {
        national[range]
            .iter()
            .fold(0u16, |acc, d| acc * 10 + u16::from(*d))
    };
    let area_code = AreaCode::new(number(0..3)).ok_or(PhoneParseError::InvalidAreaCode)?;
    let exchange = number(3..6);
    if exchange < 200 {
        return Err(PhoneParseError::InvalidExchange);
    }
    Ok(NanpNumber {
        area_code,
        exchange,
        line: number(6..10),
    })
}

/// The area code of a phone number in any format [`parse_nanp`] accepts.
pub fn area_code_of(input: &str) -> Result<AreaCode, PhoneParseError> {
    parse_nanp(input).map(|n| n.area_code)
}

/// Cuts a trailing extension: `x123`, `ext. 123`, `extension 12`, `#12`, `;ext=12`.
fn strip_extension(text: &str) -> &str {
    let lower = text.to_ascii_lowercase();
    let cut = ["ext", "x", "#", ";"]
        .iter()
        .filter_map(|marker| lower.find(marker))
        .min();
    match cut {
        Some(at) => &text[..at],
        None => text,
    }
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AreaCodeEntry {
    pub area_code: AreaCode,
    /// ISO 3166 country, with the subdivision for the US and Canada (`US-TX`).
    pub region: &'static str,
    /// Every zone a number with this code may be in; the first is the primary.
    pub zones: Vec<Tz>,
}

impl AreaCodeEntry {
    /// Whether the code spans more than one zone.
    pub fn spans_zones(&self) -> bool {
        self.zones.len() > 1
    }
}

/// What the table says about an area code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AreaCodeLookup {
    Geographic(&'static AreaCodeEntry),
    /// Toll-free, personal, government or premium: no place, no zone.
    NonGeographic,
    /// Not in the table (not in service, or newer than the table).
    Unknown,
}

/// Looks an area code up in the table.
pub fn lookup(area_code: AreaCode) -> AreaCodeLookup {
    let table = table();
    if let Ok(i) = table
        .entries
        .binary_search_by_key(&area_code, |e| e.area_code)
    {
        return AreaCodeLookup::Geographic(&table.entries[i]);
    }
    if NON_GEOGRAPHIC.contains(&area_code.get()) {
        AreaCodeLookup::NonGeographic
    } else {
        AreaCodeLookup::Unknown
    }
}

/// Every entry of the table, in area-code order.
pub fn entries() -> &'static [AreaCodeEntry] {
    &table().entries
}

/// Table lines that did not parse, as (line number, reason); empty in a
/// good build (a test checks). Exposed so a service can report it at start.
pub fn table_errors() -> &'static [(usize, String)] {
    &table().rejected
}

struct Table {
    entries: Vec<AreaCodeEntry>,
    /// Lines that did not parse (line number, reason); a test keeps it empty.
    rejected: Vec<(usize, String)>,
}

fn table() -> &'static Table {
    static TABLE_CELL: OnceLock<Table> = OnceLock::new();
    TABLE_CELL.get_or_init(|| parse_table(TABLE))
}

fn parse_table(text: &'static str) -> Table {
    let mut entries: Vec<AreaCodeEntry> = Vec::new();
    let mut rejected = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match parse_line(line) {
            Ok(entry) => entries.push(entry),
            Err(reason) => rejected.push((n + 1, reason)),
        }
    }
    entries.sort_by_key(|e| e.area_code);
    let before = entries.len();
    entries.dedup_by_key(|e| e.area_code);
    if entries.len() != before {
        rejected.push((
            0,
            format!("{} duplicate area codes", before - entries.len()),
        ));
    }
    Table { entries, rejected }
}

fn parse_line(line: &'static str) -> Result<AreaCodeEntry, String> {
    let mut fields = line.split_whitespace();
    let code = fields.next().ok_or("empty line")?;
    let area_code = code
        .parse::<u16>()
        .ok()
        .and_then(AreaCode::new)
        .ok_or_else(|| format!("bad area code {code:?}"))?;
    let region = fields.next().ok_or("no region")?;
    let zones = fields
        .map(|name| {
            name.parse::<Tz>()
                .map_err(|_| format!("unknown zone {name:?}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if zones.is_empty() {
        return Err(format!("area code {code} has no zone"));
    }
    Ok(AreaCodeEntry {
        area_code,
        region,
        zones,
    })
}
