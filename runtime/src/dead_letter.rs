//! Dead letters: what the runtime writes when a processor returns an error,
//! whether for a record, a due timer or an effect's result. The Kafka
//! engine and the test driver both build them here, so they agree on the
//! topic, key, value and headers; the engine sends them in the open
//! transaction, so a dead letter commits exactly when the failure's other
//! consequences (the consumed offset, the removed timer) do.

use crate::api::{header, EffectResult, Headers, Output, Record, TimeDomain, Timer};

/// What a processor was handling when it failed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cause<'a> {
    /// An input record (`process`).
    Record(&'a Record),
    /// A due timer of `partition` (`on_timer`), fired at wall clock `now_ms`.
    Timer {
        timer: &'a Timer,
        partition: i32,
        now_ms: i64,
    },
    /// An effect's result (`on_effect`), handed over at wall clock `now_ms`.
    Effect {
        result: &'a EffectResult,
        now_ms: i64,
    },
}

impl Cause<'_> {
    /// The handler that failed, as the `handler` metric label says it.
    pub fn handler(&self) -> &'static str {
        match self {
            Cause::Record(_) => "process",
            Cause::Timer { .. } => "on_timer",
            Cause::Effect { .. } => "on_effect",
        }
    }

    /// Where the failed input came from, for logs and the `dlq-source` header:
    /// `topic/partition/offset`, `timer/partition/domain/name` or
    /// `effect/partition/id`.
    pub fn source(&self) -> String {
        match self {
            Cause::Record(record) => {
                format!("{}/{}/{}", record.topic, record.partition, record.offset)
            }
            Cause::Timer {
                timer, partition, ..
            } => format!(
                "timer/{partition}/{}/{}",
                domain_name(timer.handle.domain),
                timer.handle.name
            ),
            Cause::Effect { result, .. } => {
                format!("effect/{}/{}", result.request.partition, result.request.id)
            }
        }
    }
}

fn domain_name(domain: TimeDomain) -> &'static str {
    match domain {
        TimeDomain::WallClock => "wall-clock",
        TimeDomain::EventTime => "event-time",
        TimeDomain::Either => "either",
    }
}

/// The timestamp a timer's consequences carry: its due time in event time
/// (deterministic under replay) and for a timer of either clock (the moment
/// it stands for, whichever clock reached it), the wall clock otherwise.
pub(crate) fn timer_timestamp(timer: &Timer, now_ms: i64) -> i64 {
    match timer.handle.domain {
        TimeDomain::EventTime | TimeDomain::Either => timer.due_ms,
        TimeDomain::WallClock => now_ms,
    }
}

/// The dead letter for `cause`, refused with `reason`. A record keeps its
/// key, value, headers and timestamp; a timer's letter holds its key and
/// payload, an effect's its key and the result's payload (what the
/// processor could not handle), so an operator can replay either.
pub(crate) fn dead_letter(app_id: &str, topic: &str, cause: &Cause<'_>, reason: &str) -> Output {
    let (key, value, mut headers, timestamp_ms, kind) = match cause {
        Cause::Record(record) => (
            record.key.clone(),
            record.value.clone(),
            record.headers.clone(),
            record.timestamp_ms,
            "record",
        ),
        Cause::Timer { timer, now_ms, .. } => {
            let mut headers = Headers::new();
            headers.insert(header::DLQ_TIMER_NAME, timer.handle.name.clone());
            headers.insert(header::DLQ_TIMER_DOMAIN, domain_name(timer.handle.domain));
            headers.insert(header::DLQ_TIMER_DUE_MS, timer.due_ms.to_string());
            (
                Some(timer.handle.key.clone()),
                Some(timer.payload.clone()),
                headers,
                timer_timestamp(timer, *now_ms),
                "timer",
            )
        }
        Cause::Effect { result, now_ms } => {
            let mut headers = Headers::new();
            headers.insert(header::DLQ_EFFECT_ID, result.request.id.clone());
            (
                Some(result.request.key.clone()),
                Some(result.payload.clone()),
                headers,
                *now_ms,
                "effect",
            )
        }
    };
    headers.insert(header::DLQ_REASON, reason);
    headers.insert(header::DLQ_SOURCE, cause.source());
    headers.insert(header::DLQ_APP, app_id);
    headers.insert(header::DLQ_KIND, kind);
    Output {
        topic: topic.to_string(),
        // Keyed like what failed, so a key's dead letters stay in order.
        partition: None,
        key,
        value,
        headers,
        timestamp_ms: Some(timestamp_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{EffectRequest, TimerHandle};

    #[test]
    fn each_cause_names_itself_in_the_headers() {
        let timer = Timer {
            handle: TimerHandle {
                domain: TimeDomain::EventTime,
                name: "expire".into(),
                key: b"k".to_vec(),
            },
            due_ms: 50,
            payload: b"p".to_vec(),
        };
        let cause = Cause::Timer {
            timer: &timer,
            partition: 3,
            now_ms: 90,
        };
        let letter = dead_letter("app", "dlq", &cause, "boom");
        let h = &letter.headers;
        assert_eq!(h.get_str(header::DLQ_KIND), Some("timer"));
        assert_eq!(
            h.get_str(header::DLQ_SOURCE),
            Some("timer/3/event-time/expire")
        );
        assert_eq!(h.get_str(header::DLQ_TIMER_DUE_MS), Some("50"));
        assert_eq!(h.get_str(header::DLQ_REASON), Some("boom"));
        // Event time: the due time, not the wall clock.
        assert_eq!(letter.timestamp_ms, Some(50));
        assert_eq!(letter.value.as_deref(), Some(&b"p"[..]));

        let result = EffectResult {
            request: EffectRequest {
                partition: 1,
                key: b"c".to_vec(),
                id: "op-7".into(),
                payload: b"req".to_vec(),
            },
            payload: b"resp".to_vec(),
        };
        let cause = Cause::Effect {
            result: &result,
            now_ms: 90,
        };
        let letter = dead_letter("app", "dlq", &cause, "bad");
        assert_eq!(letter.headers.get_str(header::DLQ_KIND), Some("effect"));
        assert_eq!(letter.headers.get_str(header::DLQ_EFFECT_ID), Some("op-7"));
        assert_eq!(
            letter.headers.get_str(header::DLQ_SOURCE),
            Some("effect/1/op-7")
        );
        assert_eq!(letter.key.as_deref(), Some(&b"c"[..]));
        assert_eq!(letter.value.as_deref(), Some(&b"resp"[..]));
        assert_eq!(cause.handler(), "on_effect");
    }
}
