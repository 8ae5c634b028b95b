//! `--lead-zone`: every lead of the workload in one time zone, named or
//! picked so that it is mid-afternoon there now.
//!
//! Why: calling windows are real local hours and federal quiet hours (before
//! 08:00, after 21:00) cannot be configured away, so at any UTC hour part of
//! the default workload cannot be called during a short run. A test that
//! must see launches (and dropped completions among them) puts its leads
//! where the law lets them be called for hours yet.

use chrono::{DateTime, Timelike, Utc};
use chrono_tz::Tz;

/// Zones at most two hours apart around the clock (summer and winter),
/// so one of them is always within an hour of mid-afternoon.
const CANDIDATES: &[&str] = &[
    "Pacific/Honolulu",
    "America/Los_Angeles",
    "America/Chicago",
    "America/New_York",
    "America/Sao_Paulo",
    "Atlantic/Cape_Verde",
    "Europe/London",
    "Europe/Berlin",
    "Europe/Athens",
    "Asia/Dubai",
    "Asia/Kolkata",
    "Asia/Bangkok",
    "Asia/Tokyo",
    "Australia/Sydney",
    "Pacific/Auckland",
];

/// Minutes after local midnight the picked zone should be nearest to (14:30).
const MID_AFTERNOON: i64 = 14 * 60 + 30;

/// A zone name that is not an IANA time zone.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not an IANA time zone (like America/Chicago), nor `auto`")]
pub struct UnknownZone(pub String);

/// The zone `given` names, or for `auto` the candidate where it is closest
/// to mid-afternoon at `now`.
pub fn resolve(given: &str, now: DateTime<Utc>) -> Result<String, UnknownZone> {
    if given != "auto" {
        return given
            .parse::<Tz>()
            .map(|tz| tz.name().to_owned())
            .map_err(|_| UnknownZone(given.to_owned()));
    }
    let distance = |name: &&&str| -> i64 {
        name.parse::<Tz>().map_or(i64::MAX, |tz| {
            let local = now.with_timezone(&tz);
            let minute = i64::from(local.hour() * 60 + local.minute());
            (minute - MID_AFTERNOON).abs()
        })
    };
    Ok(CANDIDATES
        .iter()
        .min_by_key(distance)
        .copied()
        .unwrap_or("America/Chicago")
        .to_owned())
}

/// Puts every lead of `plan` in `zone` (on its contact record, which the
/// contact processor trusts first).
pub fn apply(plan: &mut callstream_workload::Plan, zone: &str) {
    for launch in &mut plan.launches {
        launch.contact.time_zone = Some(zone.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_mid_afternoon_somewhere_at_every_hour() {
        for day in ["2025-01-15", "2025-07-15"] {
            for hour in 0..24 {
                for minute in [0, 30] {
                    let now: DateTime<Utc> =
                        format!("{day}T{hour:02}:{minute:02}:00Z").parse().unwrap();
                    let zone: Tz = resolve("auto", now).unwrap().parse().unwrap();
                    let local = now.with_timezone(&zone);
                    let m = local.hour() * 60 + local.minute();
                    assert!(
                        (13 * 60..=16 * 60).contains(&m),
                        "{now}: {zone} is at {local}"
                    );
                }
            }
        }
    }

    #[test]
    fn named_zones_are_checked() {
        let now = Utc::now();
        assert_eq!(
            resolve("Asia/Kolkata", now).unwrap(),
            "Asia/Kolkata".to_string()
        );
        assert_eq!(
            resolve("Mars/Olympus", now),
            Err(UnknownZone("Mars/Olympus".into()))
        );
    }
}
