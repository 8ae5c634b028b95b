//! What the edges accept from outside: ids, free text, phone numbers and time zones.
//!
//! One rule set, shared by the gateway and the operator API, so that whatever an edge
//! accepts every processor, every Kafka header and every Postgres view can store whole:
//! an input is refused at the door with the field named, never dropped later by a
//! projection that cannot write it.
//!
//! - **Ids** (contact, campaign, request, call, tenant, statuses): 1 to [`MAX_ID_BYTES`]
//!   bytes: runs of `A-Z a-z 0-9` and `- _ : @ + = ~` joined by single dots
//!   ([`ID_PATTERN`]). No `/`, `?`, `#`, `%`, `..`, leading or trailing dot, whitespace
//!   or control characters, so an id is safe as a URL path segment, a header value and a
//!   file name.
//! - **Free text** (reasons, summaries, the lead's words): any Unicode except NUL and the
//!   other C0 controls; tab and line breaks (LF, CR) are kept. Bounded in characters, per
//!   field ([`MAX_REASON_CHARS`], [`MAX_PHRASE_CHARS`], [`MAX_SUMMARY_CHARS`]).
//! - **Phone numbers**: E.164 only, `+` then 8 to 15 digits, the first not 0: no SIP or
//!   client addresses, no short or emergency codes, no formatting.
//! - **Time zones**: an IANA name the zone database knows (`America/New_York`).

use std::str::FromStr;

/// Longest id, in bytes (ids are ASCII).
pub const MAX_ID_BYTES: usize = 256;
/// [`check_id`] as a regular expression (with the length apart), for API documents.
pub const ID_PATTERN: &str = r"^[A-Za-z0-9_:@+=~-]+(\.[A-Za-z0-9_:@+=~-]+)*$";
/// [`check_text`]'s characters as a regular expression (JSON Schema, ECMA-262 syntax).
pub const TEXT_PATTERN: &str = r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F]*$";
/// Longest reason an operator or the CRM gives, in characters.
pub const MAX_REASON_CHARS: usize = 500;
/// Longest phrase of the lead's own words (a callback time, a request), in characters.
pub const MAX_PHRASE_CHARS: usize = 500;
/// Longest call summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 16_000;

/// Why a value was refused; the edge names the field, this says what is wrong with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("is empty")]
    Empty,
    #[error("is longer than {max} {unit}")]
    TooLong { max: usize, unit: &'static str },
    #[error("may contain only letters, digits and - _ . : @ + = ~")]
    IdCharacter,
    #[error("must not start or end with a dot, or hold two in a row")]
    DotDot,
    #[error("contains a control character (text may hold tabs and line breaks, nothing else below U+0020)")]
    ControlCharacter,
    #[error("is not an E.164 number (+ then 8 to 15 digits, the first not 0)")]
    NotE164,
    #[error("is not a US state or territory (a two-letter code such as FL, or its name)")]
    UnknownState,
    #[error("is not an IANA time zone such as America/New_York")]
    UnknownTimeZone,
}

fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'@' | b'+' | b'=' | b'~')
}

/// An id: non-empty, at most [`MAX_ID_BYTES`], only the id characters, dots only between
/// other characters.
pub fn check_id(value: &str) -> Result<(), Refusal> {
    if value.is_empty() {
        return Err(Refusal::Empty);
    }
    if value.len() > MAX_ID_BYTES {
        return Err(Refusal::TooLong {
            max: MAX_ID_BYTES,
            unit: "bytes",
        });
    }
    if !value.bytes().all(is_id_byte) {
        return Err(Refusal::IdCharacter);
    }
    if value.contains("..") || value.starts_with('.') || value.ends_with('.') {
        return Err(Refusal::DotDot);
    }
    Ok(())
}

/// Free text of at most `max_chars` characters without control characters other than
/// tab, LF and CR. Empty text is allowed (the edge decides whether the field is needed).
pub fn check_text(value: &str, max_chars: usize) -> Result<(), Refusal> {
    if value
        .chars()
        .any(|c| c < ' ' && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Err(Refusal::ControlCharacter);
    }
    // Counting stops one past the limit: a huge value costs no more than a long one.
    if value.chars().take(max_chars + 1).count() > max_chars {
        return Err(Refusal::TooLong {
            max: max_chars,
            unit: "characters",
        });
    }
    Ok(())
}

/// An E.164 number: `+`, then 8 to 15 digits, the first of them not 0.
pub fn check_e164(value: &str) -> Result<(), Refusal> {
    let digits = value.strip_prefix('+').ok_or(Refusal::NotE164)?;
    let well_formed = (8..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0');
    if well_formed {
        Ok(())
    } else {
        Err(Refusal::NotE164)
    }
}

/// Whether `value` is an E.164 number (see [`check_e164`]).
pub fn is_e164(value: &str) -> bool {
    check_e164(value).is_ok()
}

/// A time zone the IANA database names.
pub fn check_time_zone(value: &str) -> Result<(), Refusal> {
    if value.is_empty() {
        return Err(Refusal::Empty);
    }
    chrono_tz::Tz::from_str(value)
        .map(|_| ())
        .map_err(|_| Refusal::UnknownTimeZone)
}

/// A US state or territory, as its code (`FL`, `US-FL`) or its name; the
/// events carry the two-letter code (see [`normal_state`]).
pub fn check_state(value: &str) -> Result<(), Refusal> {
    normal_state(value).map(|_| ())
}

/// The two-letter code of a US state or territory named either way.
pub fn normal_state(value: &str) -> Result<String, Refusal> {
    if value.trim().is_empty() {
        return Err(Refusal::Empty);
    }
    crate::calling_rules::Jurisdiction::parse(value)
        .map(|j| j.code().to_owned())
        .map_err(|_| Refusal::UnknownState)
}

#[cfg(test)]
#[path = "input/tests.rs"]
mod tests;
