//! Figures the views and the topics both hold are compared one by one, and
//! only real differences are reported.

use std::collections::BTreeMap;

use callstream_schemas::LaunchStatus;
use uuid::Uuid;

use super::*;
use crate::demo::tally::Launch;

/// 09:03 UTC on some day: in the 09:00 bucket.
const AT: i64 = 1_764_752_580_000;

fn tally() -> Tally {
    let mut t = Tally::default();
    for n in 0..3 {
        let id = Uuid::new_v4();
        t.launches.insert(
            id,
            Launch {
                status: LaunchStatus::Accepted,
                accepted_at_ms: Some(AT),
                reconciled: false,
            },
        );
        t.plans
            .insert(Uuid::new_v4(), ("campaign_entry".into(), "x".into()));
        match n {
            0 => {
                t.delivered.insert(id, ("answered".into(), AT));
            }
            1 => {
                t.missing.insert(id, AT);
                t.resolved.insert(id, ("recovered".into(), AT));
                t.recovered_events.insert(id, ("answered".into(), AT));
            }
            _ => {
                t.missing.insert(id, AT);
            }
        }
    }
    t
}

fn figures() -> ViewFigures {
    let map = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    };
    ViewFigures {
        jobs_by_state: map(&[("completed", 2), ("launched", 1)]),
        exceptions_by_status: BTreeMap::new(),
        launches_by_status: map(&[("accepted", 3)]),
        with_completion: 2,
        without_completion: 1,
        missing: 2,
        resolutions: map(&[("recovered", 1), ("unresolved", 1)]),
        delivery: vec![ViewBucket {
            start: rfc3339(AT - AT.rem_euclid(BUCKET_MS)),
            accepted: 3,
            delivered: 1,
            recovered: 1,
            missing: 2,
        }],
    }
}

#[test]
fn equal_figures_agree() {
    let (compared, differ) = compare(&figures(), &tally());
    assert!(compared >= 10, "{compared}");
    assert_eq!(differ, vec![]);
}

#[test]
fn each_difference_is_named_with_both_counts() {
    let mut v = figures();
    v.with_completion = 3;
    v.delivery[0].delivered = 2;
    v.resolutions.insert("late_completion".into(), 1);
    let (_, differ) = compare(&v, &tally());
    let named: Vec<(&str, u64, u64)> = differ
        .iter()
        .map(|c| (c.figure.as_str(), c.views, c.topics))
        .collect();
    assert!(named.contains(&("accepted launches with a completion", 3, 2)));
    assert!(named.contains(&("missing, late_completion", 1, 0)));
    assert!(named
        .iter()
        .any(|(f, v, t)| f.ends_with("delivered") && (*v, *t) == (2, 1)));
    assert_eq!(differ.len(), 3, "{differ:?}");
}

#[test]
fn views_agree_only_when_read_compared_and_equal() {
    let mut v = Views {
        read: true,
        compared: 5,
        ..Views::default()
    };
    assert!(v.agree());
    v.disagreements.push(Comparison {
        figure: "jobs".into(),
        views: 1,
        topics: 2,
    });
    assert!(!v.agree());
    assert!(!Views::default().agree(), "not read is not agreement");
    let mut text = String::new();
    v.write_text(&mut text);
    assert!(text.contains("1 DISAGREE") && text.contains("jobs: views 1, topics 2"));
}
