//! How the console writes times and ids: every time names its zone (the operator's, from
//! the browser, and the lead's beside it where there is one), every id can be copied whole.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use maud::{html, Markup};
use uuid::Uuid;

/// The operator's time zone, as the browser reports it (`X-Console-Zone`); UTC when absent
/// or unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone(pub Tz);

/// `Dec 4, 14:05 CST`: a time in a zone, with the zone's abbreviation.
pub fn at(t: DateTime<Utc>, zone: Tz) -> String {
    t.with_timezone(&zone)
        .format("%b %-d, %H:%M %Z")
        .to_string()
}

/// A time in the operator's zone, with the lead's local time beside it when the lead's
/// zone is known and differs.
pub fn at_both(t: DateTime<Utc>, operator: Tz, lead_zone: Option<&str>) -> Markup {
    let lead: Option<Tz> = lead_zone.and_then(|z| z.parse().ok());
    html! {
        time datetime=(t.to_rfc3339()) { (at(t, operator)) }
        @if let Some(lead) = lead.filter(|l| *l != operator) {
            br; small { "lead: " (t.with_timezone(&lead).format("%H:%M %Z")) }
        }
    }
}

/// `3 h 12 min`, `45 min`, `20 s`: a duration as a person reads it; negative is `0 s`.
pub fn span(d: Duration) -> String {
    let secs = d.num_seconds().max(0);
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        s => format!("{} d {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// The first 8 hex digits of an id, with the whole id as its title (hover, screen readers).
pub fn short(id: Uuid) -> Markup {
    let text = id.to_string();
    html! { code title=(text) { (&text[..8]) } }
}

/// A local date-time typed into the console (`2026-12-04T15:30` from an
/// `<input type="datetime-local">`) in `zone`, as UTC. A time the clocks skip (spring
/// forward) is refused; a time they pass twice (fall back) is the earlier one.
pub fn parse_local(text: &str, zone: Tz) -> Option<DateTime<Utc>> {
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S"))
        .ok()?;
    zone.from_local_datetime(&naive)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
}

/// The first instant of local `day` in `zone`, as UTC: midnight, or the first hour that
/// exists where a zone skips midnight.
pub fn start_of_local_day(day: NaiveDate, zone: Tz) -> DateTime<Utc> {
    (0..4)
        .find_map(|h| {
            zone.from_local_datetime(&day.and_hms_opt(h, 0, 0)?)
                .earliest()
        })
        .map_or_else(
            || Utc.from_utc_datetime(&day.and_hms_opt(0, 0, 0).unwrap_or_default()),
            |t| t.with_timezone(&Utc),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn times_name_their_zone() {
        let t = utc("2026-12-04T20:05:00Z");
        assert_eq!(at(t, chrono_tz::America::Chicago), "Dec 4, 14:05 CST");
        assert_eq!(at(t, Tz::UTC), "Dec 4, 20:05 UTC");
        let both = at_both(t, Tz::UTC, Some("America/New_York")).into_string();
        assert!(both.contains("lead: 15:05 EST"), "{both}");
        // The same zone, or none, shows one time.
        assert!(!at_both(t, Tz::UTC, Some("UTC"))
            .into_string()
            .contains("lead"));
        assert!(!at_both(t, Tz::UTC, Some("not/a_zone"))
            .into_string()
            .contains("lead"));
    }

    #[test]
    fn spans_read_as_a_person_says_them() {
        assert_eq!(span(Duration::seconds(-5)), "0 s");
        assert_eq!(span(Duration::seconds(20)), "20 s");
        assert_eq!(span(Duration::seconds(45 * 60 + 3)), "45 min");
        assert_eq!(span(Duration::seconds(3 * 3600 + 12 * 60)), "3 h 12 min");
        assert_eq!(span(Duration::seconds(2 * 86_400 + 3600)), "2 d 1 h");
    }

    #[test]
    fn local_times_are_read_in_the_leads_zone() {
        let chicago = chrono_tz::America::Chicago;
        assert_eq!(
            parse_local("2026-12-04T15:30", chicago),
            Some(utc("2026-12-04T21:30:00Z"))
        );
        // 02:30 on the spring-forward day does not exist in Chicago.
        assert_eq!(parse_local("2026-03-08T02:30", chicago), None);
        // 01:30 on the fall-back day happens twice: the first.
        assert_eq!(
            parse_local("2026-11-01T01:30", chicago),
            Some(utc("2026-11-01T06:30:00Z"))
        );
        assert_eq!(parse_local("tomorrow", chicago), None);
    }

    #[test]
    fn a_day_starts_at_local_midnight() {
        let day = |s: &str| s.parse::<NaiveDate>().unwrap();
        let chicago = chrono_tz::America::Chicago;
        assert_eq!(
            start_of_local_day(day("2026-12-03"), chicago),
            utc("2026-12-03T06:00:00Z")
        );
        assert_eq!(
            start_of_local_day(day("2026-12-04"), Tz::UTC),
            utc("2026-12-04T00:00:00Z")
        );
        // Havana springs forward at midnight: the day starts at 01:00.
        assert_eq!(
            start_of_local_day(day("2026-03-08"), chrono_tz::America::Havana),
            utc("2026-03-08T05:00:00Z")
        );
    }
}
