//! The call list's query, in Twilio's names: `To`, `From`, `Status`,
//! `StartTime`, `StartTime>`, `StartTime<` (so `StartTime>=2024-05-01` in a
//! URL is the key `StartTime>` and the value `2024-05-01`), the same three
//! for `EndTime`, and `PageSize` (default 50, at most 1000) and `Page`.
//!
//! A date (`YYYY-MM-DD`, UTC) means the whole day: `StartTime>=D` from its
//! first instant, `StartTime<=D` to its last. A full timestamp (RFC 3339,
//! or RFC 2822 as Twilio writes them) is an exact, inclusive bound. Pure:
//! parsing and matching need no clock.

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};

use crate::plan::CallStatus;
use crate::store::CallRecord;

pub const DEFAULT_PAGE_SIZE: usize = 50;
pub const MAX_PAGE_SIZE: usize = 1000;

/// Inclusive bounds on an instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

impl Range {
    pub fn contains(&self, t: Option<DateTime<Utc>>) -> bool {
        if self.from.is_none() && self.to.is_none() {
            return true;
        }
        let Some(t) = t else {
            return false;
        };
        self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|to| t <= to)
    }
}

/// A parsed list query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListQuery {
    pub to: Option<String>,
    pub from: Option<String>,
    pub status: Option<CallStatus>,
    pub start: Range,
    pub end: Range,
    pub page: usize,
    pub page_size: usize,
    /// The filters, re-encoded, for the page URIs.
    pub filters: String,
}

/// A query parameter that cannot be read: (name, why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadParam(pub String, pub &'static str);

/// Either a day (first and last instant) or one instant.
fn parse_time(raw: &str) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let raw = raw.trim();
    if let Ok(day) = NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        let first = day.and_hms_opt(0, 0, 0)?.and_utc();
        let last = first + TimeDelta::days(1) - TimeDelta::nanoseconds(1);
        return Some((first, last));
    }
    // A `+` offset arrives as a space when the client did not escape it.
    let plus = raw.replace(' ', "+");
    let exact = DateTime::parse_from_rfc3339(raw)
        .or_else(|_| DateTime::parse_from_rfc3339(&plus))
        .or_else(|_| DateTime::parse_from_rfc2822(raw))
        .ok()?
        .with_timezone(&Utc);
    Some((exact, exact))
}

fn bound(range: &mut Range, op: &str, value: &str, name: &str) -> Result<(), BadParam> {
    let (first, last) =
        parse_time(value).ok_or_else(|| BadParam(name.to_string(), "is not a date or time"))?;
    match op {
        ">" => range.from = Some(first),
        "<" => range.to = Some(last),
        _ => {
            range.from = Some(first);
            range.to = Some(last);
        }
    }
    Ok(())
}

fn number(name: &str, value: &str) -> Result<usize, BadParam> {
    value
        .parse()
        .map_err(|_| BadParam(name.to_string(), "is not a whole number"))
}

impl ListQuery {
    /// Reads a raw query string.
    pub fn parse(query: &str) -> Result<Self, BadParam> {
        let mut q = ListQuery {
            page_size: DEFAULT_PAGE_SIZE,
            ..ListQuery::default()
        };
        let mut kept = form_urlencoded::Serializer::new(String::new());
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            let (name, value) = (name.as_ref(), value.as_ref());
            match name {
                "Page" => q.page = number(name, value)?,
                "PageSize" => {
                    q.page_size = number(name, value)?.clamp(1, MAX_PAGE_SIZE);
                }
                "PageToken" => {}
                _ => {
                    match name {
                        "To" => q.to = Some(value.to_string()),
                        "From" => q.from = Some(value.to_string()),
                        "Status" => {
                            let status = CallStatus::parse(value)
                                .ok_or_else(|| BadParam(name.into(), "is not a call status"))?;
                            q.status = Some(status);
                        }
                        _ => {
                            if let Some(op) = name.strip_prefix("StartTime") {
                                bound(&mut q.start, op, value, name)?;
                            } else if let Some(op) = name.strip_prefix("EndTime") {
                                bound(&mut q.end, op, value, name)?;
                            }
                            // Other filters (ParentCallSid, ...) match all.
                        }
                    }
                    kept.append_pair(name, value);
                }
            }
        }
        q.filters = kept.finish();
        Ok(q)
    }

    pub fn matches(&self, c: &CallRecord) -> bool {
        self.to.as_ref().is_none_or(|to| *to == c.to)
            && self.from.as_ref().is_none_or(|f| *f == c.from)
            && self.status.is_none_or(|s| s == c.status)
            && self.start.contains(Some(c.start_time))
            && self.end.contains(c.end_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    #[test]
    fn twilio_filter_names() {
        let q = ListQuery::parse(
            "To=%2B15550001111&StartTime>=2024-05-01&StartTime<=2024-05-02&Status=completed&PageSize=5&Page=2",
        )
        .unwrap();
        assert_eq!(q.to.as_deref(), Some("+15550001111"));
        assert_eq!(q.status, Some(CallStatus::Completed));
        assert_eq!(q.start.from, Some(utc(2024, 5, 1, 0, 0)));
        assert!(q.start.contains(Some(utc(2024, 5, 2, 23, 59))));
        assert!(!q.start.contains(Some(utc(2024, 5, 3, 0, 0))));
        assert_eq!((q.page, q.page_size), (2, 5));
        assert!(
            q.filters.contains("StartTime%3E=2024-05-01"),
            "{}",
            q.filters
        );
        assert!(!q.filters.contains("Page"));
    }

    #[test]
    fn time_forms() {
        type Bounds = Option<(DateTime<Utc>, DateTime<Utc>)>;
        let cases: &[(&str, Bounds)] = &[
            (
                "2024-05-01T10:30:00Z",
                Some((utc(2024, 5, 1, 10, 30), utc(2024, 5, 1, 10, 30))),
            ),
            (
                "2024-05-01T12:30:00 02:00",
                Some((utc(2024, 5, 1, 10, 30), utc(2024, 5, 1, 10, 30))),
            ),
            (
                "Wed, 01 May 2024 10:30:00 +0000",
                Some((utc(2024, 5, 1, 10, 30), utc(2024, 5, 1, 10, 30))),
            ),
            ("yesterday", None),
            ("2024-13-01", None),
        ];
        for (raw, want) in cases {
            assert_eq!(parse_time(raw), *want, "{raw}");
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let cases = [
            ("Status=ringing-ish", "Status"),
            ("StartTime>=soon", "StartTime>"),
            ("PageSize=many", "PageSize"),
        ];
        for (query, name) in cases {
            let err = ListQuery::parse(query).unwrap_err();
            assert_eq!(err.0, name, "{query}");
        }
        assert_eq!(
            ListQuery::parse("PageSize=5000").unwrap().page_size,
            MAX_PAGE_SIZE
        );
    }

    #[test]
    fn an_unended_call_matches_no_end_time_filter() {
        let end = Range {
            from: Some(utc(2024, 1, 1, 0, 0)),
            to: None,
        };
        assert!(!end.contains(None));
        assert!(Range::default().contains(None));
    }
}
