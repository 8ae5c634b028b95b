//! The alerts the notifier raises itself, per tenant, from what it reads: open missing
//! completions over a threshold, dead letters, failed launches and CRM writes per 10
//! minutes over a threshold, and (for the deployment, tenant `*`) a processor's consumer
//! lag over a threshold for 5 minutes. Each raised alert resolves when its condition
//! clears, and says so. Pure: the processor feeds it [`Signal`]s and the time.
//!
//! The signals are a repartition, as a Kafka Streams aggregation would do it: the
//! exceptions and dead letters arrive on contact partitions, and each becomes a small
//! JSON signal on `notifier-signals` keyed by tenant, so one partition holds a tenant's
//! whole count.

use std::collections::{BTreeMap, VecDeque};

use callstream_schemas::{Alert, AlertKind, AlertStatus};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What the watch counts (the value of `notifier-signals`, JSON so standard tools read it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "signal")]
pub enum Signal {
    /// A completion_missing exception opened.
    MissingOpened { tenant: String, exception_id: Uuid },
    /// A completion_missing exception resolved or ignored.
    MissingClosed { tenant: String, exception_id: Uuid },
    /// A launch_failed or crm_failed exception opened at `at_ms`.
    Failure {
        tenant: String,
        exception_id: Uuid,
        at_ms: i64,
    },
    /// A record dead-lettered at `at_ms` (`source`: topic/partition/offset).
    DeadLetter {
        tenant: String,
        source: String,
        at_ms: i64,
    },
    /// A processor's consumer lag (records behind, all partitions) sampled at `at_ms`.
    Lag { group: String, lag: i64, at_ms: i64 },
}

impl Signal {
    /// The tenant it counts for (the key on `notifier-signals`); lag is the deployment's.
    pub fn tenant(&self) -> &str {
        match self {
            Self::MissingOpened { tenant, .. }
            | Self::MissingClosed { tenant, .. }
            | Self::Failure { tenant, .. }
            | Self::DeadLetter { tenant, .. } => tenant,
            Self::Lag { .. } => callstream_kit::control::ALL_TENANTS,
        }
    }
}

/// When the watch raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Open missing completions that raise `missing_backlog`.
    pub missing_backlog: u64,
    /// Dead letters in the window that raise `dead_letters` (it resolves when the window
    /// holds none).
    pub dead_letters: u32,
    /// Failed launches and CRM writes in the window that raise `error_rate`.
    pub error_rate: u32,
    /// The counting window (10 minutes).
    pub window_ms: i64,
    /// Records behind that count as lagging.
    pub lag: i64,
    /// How long a lag must last to raise `consumer_lag` (5 minutes).
    pub lag_for_ms: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            missing_backlog: 50,
            dead_letters: 1,
            error_rate: 20,
            window_ms: 10 * 60_000,
            lag: 10_000,
            lag_for_ms: 5 * 60_000,
        }
    }
}

/// An alert raised and not yet resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Raised {
    pub alert_id: Uuid,
    pub since_ms: i64,
}

/// One processor's lag, as watched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LagWatch {
    pub over_since_ms: Option<i64>,
    pub last: i64,
    pub raised: Option<Raised>,
}

/// Everything the watch keeps for one tenant (open missing completions are counted here;
/// which ones are open is kept per exception beside it, so a repeat does not count twice).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watch {
    pub missing_open: u64,
    pub missing: Option<Raised>,
    /// Times of the latest dead letters (at most the threshold's worth).
    pub dead_letters: VecDeque<i64>,
    pub dead: Option<Raised>,
    pub failures: VecDeque<i64>,
    pub errors: Option<Raised>,
    pub lag: BTreeMap<String, LagWatch>,
}

/// A raise or a resolve, as the alert event says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub kind: AlertKind,
    pub status: AlertStatus,
    pub alert_id: Uuid,
    pub since_ms: i64,
    pub value: f64,
    pub threshold: f64,
    pub subject: Option<String>,
    pub detail: String,
}

fn alert_id(tenant: &str, kind: AlertKind, subject: &str, since_ms: i64) -> Uuid {
    callstream_domain::ids::notifier::watch_alert(tenant, kind.as_str(), subject, since_ms)
}

/// Keeps the times within the window, and at most `keep` of them (the newest).
fn slide(times: &mut VecDeque<i64>, now_ms: i64, window_ms: i64, keep: usize) {
    while times.front().is_some_and(|t| *t <= now_ms - window_ms) || times.len() > keep {
        times.pop_front();
    }
}

impl Watch {
    /// Counts one signal (for missing completions, the caller has checked it is new).
    pub fn count(&mut self, signal: &Signal, t: &Thresholds) {
        let keep = |threshold: u32| threshold.max(1) as usize;
        match signal {
            Signal::MissingOpened { .. } => self.missing_open += 1,
            Signal::MissingClosed { .. } => {
                self.missing_open = self.missing_open.saturating_sub(1);
            }
            Signal::Failure { at_ms, .. } => {
                self.failures.push_back(*at_ms);
                self.failures.make_contiguous().sort_unstable();
                slide(&mut self.failures, *at_ms, t.window_ms, keep(t.error_rate));
            }
            Signal::DeadLetter { at_ms, .. } => {
                self.dead_letters.push_back(*at_ms);
                self.dead_letters.make_contiguous().sort_unstable();
                slide(
                    &mut self.dead_letters,
                    *at_ms,
                    t.window_ms,
                    keep(t.dead_letters),
                );
            }
            Signal::Lag { group, lag, at_ms } => {
                let w = self.lag.entry(group.clone()).or_default();
                w.last = *lag;
                if *lag > t.lag {
                    w.over_since_ms.get_or_insert(*at_ms);
                } else {
                    w.over_since_ms = None;
                }
            }
        }
    }

    /// The alerts to raise and resolve at `now_ms`.
    pub fn evaluate(&mut self, tenant: &str, now_ms: i64, t: &Thresholds) -> Vec<Change> {
        let mut out = Vec::new();
        let open = self.missing_open;
        let over = open >= t.missing_backlog;
        flip(
            &mut self.missing,
            over,
            now_ms,
            &mut out,
            |status, raised| Change {
                kind: AlertKind::MissingBacklog,
                status,
                alert_id: raised.alert_id,
                since_ms: raised.since_ms,
                value: open as f64,
                threshold: t.missing_backlog as f64,
                subject: None,
                detail: format!("{open} missing completions are open"),
            },
            |since| alert_id(tenant, AlertKind::MissingBacklog, "", since),
        );

        slide(
            &mut self.dead_letters,
            now_ms,
            t.window_ms,
            t.dead_letters.max(1) as usize,
        );
        let dead = self.dead_letters.len() as u32;
        let over = dead >= t.dead_letters.max(1);
        let clear = dead == 0;
        flip_with_clear(
            &mut self.dead,
            over,
            clear,
            now_ms,
            &mut out,
            |status, raised| Change {
                kind: AlertKind::DeadLetters,
                status,
                alert_id: raised.alert_id,
                since_ms: raised.since_ms,
                value: f64::from(dead),
                threshold: f64::from(t.dead_letters),
                subject: None,
                detail: if clear {
                    "no dead letters in the last 10 minutes".into()
                } else {
                    format!("{dead} or more records dead-lettered in the last 10 minutes")
                },
            },
            |since| alert_id(tenant, AlertKind::DeadLetters, "", since),
        );

        slide(
            &mut self.failures,
            now_ms,
            t.window_ms,
            t.error_rate.max(1) as usize,
        );
        let failures = self.failures.len() as u32;
        let over = failures >= t.error_rate.max(1);
        flip(
            &mut self.errors,
            over,
            now_ms,
            &mut out,
            |status, raised| Change {
                kind: AlertKind::ErrorRate,
                status,
                alert_id: raised.alert_id,
                since_ms: raised.since_ms,
                value: f64::from(failures),
                threshold: f64::from(t.error_rate),
                subject: None,
                detail: format!(
                    "{failures} or more failed launches and CRM writes in the last 10 minutes"
                ),
            },
            |since| alert_id(tenant, AlertKind::ErrorRate, "", since),
        );

        for (group, w) in &mut self.lag {
            let over = w.over_since_ms.is_some_and(|s| now_ms - s >= t.lag_for_ms);
            let last = w.last;
            let since = w.over_since_ms.unwrap_or(now_ms);
            flip(
                &mut w.raised,
                over,
                now_ms,
                &mut out,
                |status, raised| Change {
                    kind: AlertKind::ConsumerLag,
                    status,
                    alert_id: raised.alert_id,
                    since_ms: raised.since_ms,
                    value: last as f64,
                    threshold: t.lag as f64,
                    subject: Some(group.clone()),
                    detail: format!("{group} is {last} records behind"),
                },
                |_| alert_id(tenant, AlertKind::ConsumerLag, group, since),
            );
        }
        out
    }

    /// When a window next slides (a count may drop and resolve an alert).
    pub fn next_wake(&self, t: &Thresholds) -> Option<i64> {
        [self.dead_letters.front(), self.failures.front()]
            .into_iter()
            .flatten()
            .map(|at| at + t.window_ms)
            .min()
    }
}

/// Raises when `over` and nothing is raised; resolves a raised one when not `over`.
fn flip(
    raised: &mut Option<Raised>,
    over: bool,
    now_ms: i64,
    out: &mut Vec<Change>,
    change: impl Fn(AlertStatus, Raised) -> Change,
    id: impl Fn(i64) -> Uuid,
) {
    flip_with_clear(raised, over, !over, now_ms, out, change, id);
}

/// [`flip`], resolving only when `clear` (which may be stricter than not `over`).
fn flip_with_clear(
    raised: &mut Option<Raised>,
    over: bool,
    clear: bool,
    now_ms: i64,
    out: &mut Vec<Change>,
    change: impl Fn(AlertStatus, Raised) -> Change,
    id: impl Fn(i64) -> Uuid,
) {
    match *raised {
        None if over => {
            let r = Raised {
                alert_id: id(now_ms),
                since_ms: now_ms,
            };
            *raised = Some(r);
            out.push(change(AlertStatus::Raised, r));
        }
        Some(r) if clear => {
            *raised = None;
            out.push(change(AlertStatus::Resolved, r));
        }
        _ => {}
    }
}

/// The alert event of a change.
pub fn alert(tenant: &str, c: &Change, now_ms: i64) -> Alert {
    let at = callstream_kit::emit::timestamp;
    Alert {
        event_id: callstream_domain::ids::notifier::watch_alert_event(
            &c.alert_id,
            c.status.as_str(),
        ),
        tenant_id: tenant.to_owned(),
        occurred_at: at(now_ms),
        causation_id: None,
        correlation_id: Some(c.alert_id),
        alert_id: c.alert_id,
        kind: c.kind,
        status: c.status,
        bucket_start: at(c.since_ms),
        bucket_ms: 0,
        launches: 0,
        completions: 0,
        rate: c.value,
        threshold: c.threshold,
        detail: Some(c.detail.clone()),
        subject: c.subject.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "acme";

    fn t() -> Thresholds {
        Thresholds {
            missing_backlog: 3,
            dead_letters: 1,
            error_rate: 2,
            window_ms: 600_000,
            lag: 100,
            lag_for_ms: 300_000,
        }
    }

    fn kinds(changes: &[Change]) -> Vec<(AlertKind, AlertStatus)> {
        changes.iter().map(|c| (c.kind, c.status)).collect()
    }

    #[test]
    fn a_missing_backlog_raises_at_the_threshold_and_resolves_below_it() {
        let mut w = Watch::default();
        let open = |n| Signal::MissingOpened {
            tenant: T.into(),
            exception_id: Uuid::from_u128(n),
        };
        for n in 0..2 {
            w.count(&open(n), &t());
        }
        assert!(w.evaluate(T, 0, &t()).is_empty());
        w.count(&open(3), &t());
        let raised = w.evaluate(T, 1, &t());
        assert_eq!(
            kinds(&raised),
            [(AlertKind::MissingBacklog, AlertStatus::Raised)]
        );
        assert!(w.evaluate(T, 2, &t()).is_empty(), "raised once");
        w.count(
            &Signal::MissingClosed {
                tenant: T.into(),
                exception_id: Uuid::from_u128(0),
            },
            &t(),
        );
        let resolved = w.evaluate(T, 3, &t());
        assert_eq!(
            kinds(&resolved),
            [(AlertKind::MissingBacklog, AlertStatus::Resolved)]
        );
        assert_eq!(
            resolved[0].alert_id, raised[0].alert_id,
            "the same alert resolves"
        );
    }

    #[test]
    fn dead_letters_raise_and_resolve_when_the_window_holds_none() {
        let mut w = Watch::default();
        w.count(
            &Signal::DeadLetter {
                tenant: T.into(),
                source: "a/0/1".into(),
                at_ms: 1_000,
            },
            &t(),
        );
        assert_eq!(
            kinds(&w.evaluate(T, 1_000, &t())),
            [(AlertKind::DeadLetters, AlertStatus::Raised)]
        );
        assert_eq!(w.next_wake(&t()), Some(601_000));
        assert!(w.evaluate(T, 600_999, &t()).is_empty());
        assert_eq!(
            kinds(&w.evaluate(T, 601_000, &t())),
            [(AlertKind::DeadLetters, AlertStatus::Resolved)]
        );
    }

    #[test]
    fn failures_per_window_raise_the_error_rate() {
        let mut w = Watch::default();
        let fail = |at_ms| Signal::Failure {
            tenant: T.into(),
            exception_id: Uuid::new_v4(),
            at_ms,
        };
        w.count(&fail(0), &t());
        w.count(&fail(700_000), &t());
        assert!(
            w.evaluate(T, 700_000, &t()).is_empty(),
            "the first slid out of the window"
        );
        w.count(&fail(701_000), &t());
        assert_eq!(
            kinds(&w.evaluate(T, 701_000, &t())),
            [(AlertKind::ErrorRate, AlertStatus::Raised)]
        );
        assert_eq!(
            kinds(&w.evaluate(T, 1_301_000, &t())),
            [(AlertKind::ErrorRate, AlertStatus::Resolved)]
        );
    }

    #[test]
    fn lag_raises_only_after_lasting_and_resolves_when_caught_up() {
        let mut w = Watch::default();
        let lag = |lag, at_ms| Signal::Lag {
            group: "contact".into(),
            lag,
            at_ms,
        };
        w.count(&lag(500, 0), &t());
        assert!(w.evaluate("*", 0, &t()).is_empty());
        w.count(&lag(50, 100_000), &t());
        w.count(&lag(500, 200_000), &t());
        assert!(
            w.evaluate("*", 400_000, &t()).is_empty(),
            "the lag restarted at 200 s"
        );
        w.count(&lag(600, 500_000), &t());
        let raised = w.evaluate("*", 500_000, &t());
        assert_eq!(
            kinds(&raised),
            [(AlertKind::ConsumerLag, AlertStatus::Raised)]
        );
        assert_eq!(raised[0].subject.as_deref(), Some("contact"));
        w.count(&lag(0, 560_000), &t());
        assert_eq!(
            kinds(&w.evaluate("*", 560_000, &t())),
            [(AlertKind::ConsumerLag, AlertStatus::Resolved)]
        );
    }
}
