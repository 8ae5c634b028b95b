//! Where a notification goes and when it may be sent: the kind patterns of a tenant's
//! routes, and its quiet hours read in a zone. Pure: the notifier passes the time.
//!
//! Kinds are dotted names (`alert.delivery_rate_low`, `exception.crm_failed`,
//! `dead_letter`); a pattern is a kind, a prefix ending in `*` (`exception.*`), or `*`.

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

/// Why a pattern or quiet hours cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotifyRuleError {
    #[error("kind pattern {0:?}: letters, digits, `_`, `.`, and one `*` at the end only")]
    BadPattern(String),
    #[error("quiet hours start and end are the same ({0}): say none instead")]
    EmptyQuietHours(String),
}

/// A kind pattern of a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindPattern {
    /// `*`: every kind.
    Any,
    /// `exception.*`: every kind starting with `exception.`.
    Prefix(String),
    Exact(String),
}

impl KindPattern {
    pub fn parse(text: &str) -> Result<Self, NotifyRuleError> {
        let bad = || NotifyRuleError::BadPattern(text.chars().take(64).collect());
        let (body, wildcard) = match text.strip_suffix('*') {
            Some(body) => (body, true),
            None => (text, false),
        };
        let valid = body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !valid || (!wildcard && body.is_empty()) || body.len() > 64 {
            return Err(bad());
        }
        Ok(match (wildcard, body.is_empty()) {
            (true, true) => Self::Any,
            (true, false) => Self::Prefix(body.to_owned()),
            (false, _) => Self::Exact(body.to_owned()),
        })
    }

    pub fn matches(&self, kind: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Prefix(prefix) => kind.starts_with(prefix.as_str()),
            Self::Exact(exact) => kind == exact,
        }
    }
}

/// Local hours, read in `zone`, in which only urgent notifications are sent.
/// `start > end` crosses midnight (21:00 to 07:00).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    pub zone: Tz,
    pub start: NaiveTime,
    pub end: NaiveTime,
}

impl QuietHours {
    pub fn new(zone: Tz, start: NaiveTime, end: NaiveTime) -> Result<Self, NotifyRuleError> {
        if start == end {
            return Err(NotifyRuleError::EmptyQuietHours(
                start.format("%H:%M").to_string(),
            ));
        }
        Ok(Self { zone, start, end })
    }

    /// Whether `at` falls in the quiet hours (start included, end not).
    pub fn is_quiet(&self, at: DateTime<Utc>) -> bool {
        let local = at.with_timezone(&self.zone).time();
        if self.start < self.end {
            self.start <= local && local < self.end
        } else {
            local >= self.start || local < self.end
        }
    }

    /// The first instant after `at` at which the quiet hours end: the end's local time on
    /// the day it next comes. A local end skipped by a clock change is read as the first
    /// instant after the gap.
    pub fn next_end(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        let today = at.with_timezone(&self.zone).date_naive();
        for days in 0..3 {
            let date = today + Duration::days(days);
            if let Some(end) = resolve(self.zone, date.and_time(self.end)) {
                if end > at {
                    return end;
                }
            }
        }
        // Not reached (an end comes every day); a day later is the safe answer.
        at + Duration::days(1)
    }
}

/// A local time as an instant: the earlier one when the clocks go back, and the first
/// minute that exists when they go forward over it.
fn resolve(zone: Tz, local: chrono::NaiveDateTime) -> Option<DateTime<Utc>> {
    (0..=180).step_by(15).find_map(|minutes| {
        zone.from_local_datetime(&(local + Duration::minutes(minutes)))
            .earliest()
            .map(|t| t.with_timezone(&Utc))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;
    use proptest::prelude::*;

    fn hm(h: u32, m: u32) -> NaiveTime {
        NaiveTime::from_hms_opt(h, m, 0).unwrap()
    }

    fn chicago(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        chrono_tz::America::Chicago
            .from_local_datetime(
                &NaiveDate::from_ymd_opt(y, mo, d)
                    .unwrap()
                    .and_time(hm(h, mi)),
            )
            .earliest()
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn patterns_match_kinds_exactly_by_prefix_or_all() {
        let exact = KindPattern::parse("exception.crm_failed").unwrap();
        assert!(exact.matches("exception.crm_failed"));
        assert!(!exact.matches("exception.crm_failed_twice"));
        let prefix = KindPattern::parse("exception.*").unwrap();
        assert!(prefix.matches("exception.no_slot"));
        assert!(!prefix.matches("alert.delivery_rate_low"));
        assert!(KindPattern::parse("*").unwrap().matches("dead_letter"));
        for bad in ["", "exc*ption", "a b", "**", "exception/*", "é"] {
            assert!(KindPattern::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn quiet_hours_across_midnight_in_the_zone() {
        let q = QuietHours::new(chrono_tz::America::Chicago, hm(21, 0), hm(7, 0)).unwrap();
        assert!(!q.is_quiet(chicago(2026, 3, 10, 20, 59)));
        assert!(q.is_quiet(chicago(2026, 3, 10, 21, 0)));
        assert!(q.is_quiet(chicago(2026, 3, 11, 6, 59)));
        assert!(!q.is_quiet(chicago(2026, 3, 11, 7, 0)));
        assert_eq!(
            q.next_end(chicago(2026, 3, 10, 22, 0)),
            chicago(2026, 3, 11, 7, 0)
        );
        assert_eq!(
            q.next_end(chicago(2026, 3, 11, 3, 0)),
            chicago(2026, 3, 11, 7, 0)
        );
    }

    #[test]
    fn an_end_the_clocks_skip_is_the_first_minute_after_the_gap() {
        // 2026-03-08 02:00 does not exist in Chicago (clocks go to 03:00).
        let q = QuietHours::new(chrono_tz::America::Chicago, hm(22, 0), hm(2, 30)).unwrap();
        let end = q.next_end(chicago(2026, 3, 7, 23, 0));
        assert_eq!(end, chicago(2026, 3, 8, 3, 0));
        assert!(!q.is_quiet(end));
    }

    #[test]
    fn empty_quiet_hours_are_refused() {
        assert!(QuietHours::new(chrono_tz::UTC, hm(7, 0), hm(7, 0)).is_err());
    }

    proptest! {
        /// The next end comes within a day and a bit, and is not quiet.
        #[test]
        fn the_next_end_is_soon_and_not_quiet(
            secs in 0i64..(4 * 365 * 86_400),
            start in 0u32..1440,
            end in 0u32..1440,
        ) {
            prop_assume!(start != end);
            let q = QuietHours::new(
                chrono_tz::America::New_York,
                hm(start / 60, start % 60),
                hm(end / 60, end % 60),
            ).unwrap();
            let at = DateTime::from_timestamp(1_767_225_600 + secs, 0).unwrap();
            let next = q.next_end(at);
            prop_assert!(next > at);
            prop_assert!(next - at <= Duration::hours(26));
            // Where the end's local time exists, it ends the quiet (a skipped end lands
            // after the gap, which may be another start).
            if next.with_timezone(&q.zone).time() == q.end {
                prop_assert!(!q.is_quiet(next));
            }
        }
    }
}
