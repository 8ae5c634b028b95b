//! Processor errors on the in-memory driver: a failing `on_timer` or
//! `on_effect` is dead-lettered with its identity and reason, exactly as a
//! refused record is, and nothing it did before failing survives.

use callstream_runtime::{
    header, Context, EffectResult, Input, Output, ProcessError, Processor, ProcessorSpec, Produced,
    Record, TestDriver, TimeDomain, Timer,
};

const START: i64 = 1_700_000_000_000;

/// Per record: `timer:<ms>` arms a wall-clock timer, `event:<ms>` an
/// event-time one, `effect` asks for an effect. Timers whose payload is
/// `bad`, and effect results that are `bad`, fail after writing state and
/// emitting, so the test can see that none of it is kept.
struct Fragile;

impl Processor for Fragile {
    fn stores(&self) -> &'static [&'static str] {
        &["seen"]
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let key = record.key.clone().unwrap_or_default();
        let value = String::from_utf8_lossy(record.value.as_deref().unwrap_or_default());
        let (kind, arg) = value.split_once(':').unwrap_or((&value, ""));
        match kind {
            "timer" | "event" => {
                let (domain, now) = if kind == "timer" {
                    (TimeDomain::WallClock, ctx.wall_clock_ms())
                } else {
                    (TimeDomain::EventTime, record.timestamp_ms)
                };
                let (delay, payload) = arg.split_once('/').unwrap_or((arg, ""));
                let delay: i64 = delay
                    .parse()
                    .map_err(|_| ProcessError::Invalid(value.to_string()))?;
                ctx.set_timer(domain, "check", key, now + delay, payload);
            }
            "effect" => ctx.request_effect(key, format!("op-{}", record.offset), arg),
            _ => {}
        }
        Ok(())
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        ctx.put("seen", timer.handle.key.clone(), b"timer".to_vec());
        ctx.emit(Output::new("out", timer.handle.key.clone(), "fired"));
        if timer.payload == b"bad" {
            return Err(ProcessError::Invalid("timer payload is bad".into()));
        }
        Ok(())
    }

    fn on_effect(
        &mut self,
        ctx: &mut Context<'_>,
        result: &EffectResult,
    ) -> Result<(), ProcessError> {
        ctx.put("seen", result.request.key.clone(), b"effect".to_vec());
        ctx.emit(Output::new("out", result.request.key.clone(), "effect"));
        if result.payload == b"bad" {
            return Err(ProcessError::Decode("effect result is bad".into()));
        }
        Ok(())
    }
}

fn driver() -> TestDriver<Fragile> {
    let spec = ProcessorSpec::new("fragile", "dlq").input("in");
    TestDriver::new(Fragile, spec, 4, START)
}

fn header<'p>(letter: &'p Produced, name: &str) -> &'p str {
    letter.headers.get_str(name).unwrap_or_default()
}

#[test]
fn a_failing_wall_clock_timer_is_dead_lettered_with_its_identity_and_removed() {
    let mut d = driver();
    d.pipe(Input::new("in", "a", "timer:1000/bad"));
    d.pipe(Input::new("in", "b", "timer:1000/good"));
    d.advance_wall_clock_ms(1_000);

    let dead = d.dead_letters();
    assert_eq!(dead.len(), 1, "{dead:?}");
    let letter = dead[0];
    assert_eq!(letter.key.as_deref(), Some(&b"a"[..]));
    assert_eq!(letter.value.as_deref(), Some(&b"bad"[..]));
    assert_eq!(header(letter, header::DLQ_KIND), "timer");
    assert_eq!(header(letter, header::DLQ_TIMER_NAME), "check");
    assert_eq!(header(letter, header::DLQ_TIMER_DOMAIN), "wall-clock");
    assert_eq!(
        header(letter, header::DLQ_TIMER_DUE_MS),
        (START + 1_000).to_string()
    );
    assert_eq!(header(letter, header::DLQ_APP), "fragile");
    assert_eq!(
        header(letter, header::DLQ_REASON),
        "cannot process: timer payload is bad"
    );
    let source = header(letter, header::DLQ_SOURCE);
    assert!(
        source.starts_with("timer/") && source.ends_with("/wall-clock/check"),
        "{source}"
    );
    assert_eq!(letter.timestamp_ms, START + 1_000);

    // The failed call's output and state write are gone; the good timer's stay.
    let out: Vec<_> = d.records("out").iter().map(|p| p.key.clone()).collect();
    assert_eq!(out, [Some(b"b".to_vec())]);
    assert_eq!(d.get("seen", b"a"), None);
    assert_eq!(d.get("seen", b"b"), Some(&b"timer"[..]));
    // Removed, not retried: a broken timer cannot spin.
    assert_eq!(d.open_timers(), 0);
    d.advance_wall_clock_ms(60_000);
    assert_eq!(d.dead_letters().len(), 1);
}

#[test]
fn a_failing_event_time_timer_carries_its_due_time_and_survives_no_restart() {
    let mut d = driver();
    d.pipe(Input::new("in", "a", "event:500/bad").at(START));
    // Moves the partition's stream time past the timer: it fires and fails.
    d.pipe(Input::new("in", "a", "noop").at(START + 500));
    let dead = d.dead_letters();
    assert_eq!(dead.len(), 1);
    assert_eq!(header(dead[0], header::DLQ_TIMER_DOMAIN), "event-time");
    // Event time: the letter is stamped with the due time, as outputs would be.
    assert_eq!(dead[0].timestamp_ms, START + 500);
    // The removal committed with the dead letter: a restart does not bring it back.
    d.restart();
    assert_eq!(d.open_timers(), 0);
    d.pipe(Input::new("in", "a", "noop").at(START + 10_000));
    assert_eq!(d.dead_letters().len(), 1);
}

#[test]
fn a_failing_effect_result_is_dead_lettered_with_the_effect_id() {
    let mut d = driver();
    d.pipe(Input::new("in", "a", "effect:dial"));
    d.pipe(Input::new("in", "b", "effect:dial"));
    let effects = d.take_effects();
    assert_eq!(effects.len(), 2);
    let (a, b) = (effects[0].clone(), effects[1].clone());
    d.complete_effect(a.clone(), b"bad".to_vec());
    d.complete_effect(b, b"ok".to_vec());

    let dead = d.dead_letters();
    assert_eq!(dead.len(), 1, "{dead:?}");
    let letter = dead[0];
    assert_eq!(letter.key.as_deref(), Some(&b"a"[..]));
    assert_eq!(letter.value.as_deref(), Some(&b"bad"[..]));
    assert_eq!(header(letter, header::DLQ_KIND), "effect");
    assert_eq!(header(letter, header::DLQ_EFFECT_ID), a.id);
    assert_eq!(
        header(letter, header::DLQ_SOURCE),
        format!("effect/{}/{}", a.partition, a.id)
    );
    assert_eq!(
        header(letter, header::DLQ_REASON),
        "cannot decode: effect result is bad"
    );
    assert_eq!(letter.timestamp_ms, START);
    assert_eq!(d.get("seen", b"a"), None);
    assert_eq!(d.get("seen", b"b"), Some(&b"effect"[..]));
    assert_eq!(d.records("out").len(), 1);
}

#[test]
fn a_refused_record_names_its_kind_too() {
    let mut d = driver();
    d.pipe(Input::new("in", "a", "timer:soon"));
    let dead = d.dead_letters();
    assert_eq!(dead.len(), 1);
    assert_eq!(header(dead[0], header::DLQ_KIND), "record");
    assert_eq!(
        header(dead[0], header::DLQ_SOURCE),
        format!("in/{}/0", dead[0].partition)
    );
}
