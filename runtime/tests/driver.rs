//! The runtime's semantics on the in-memory driver: state, timers in each
//! domain, dead letters, header inheritance and restore after a restart.

use callstream_runtime::testkit::{decode_count, CountingProcessor, COUNTS_STORE};
use callstream_runtime::{
    header, Context, Input, Output, ProcessError, Processor, ProcessorSpec, Record, TestDriver,
    TimeDomain, Timer,
};

const START: i64 = 1_700_000_000_000;

fn counting_driver() -> TestDriver<CountingProcessor> {
    let spec = ProcessorSpec::new("counter", "dlq").input("in");
    let processor = CountingProcessor {
        output_topic: "out".into(),
    };
    TestDriver::new(processor, spec, 6, START)
}

fn values(driver: &TestDriver<CountingProcessor>, topic: &str) -> Vec<String> {
    driver
        .records(topic)
        .iter()
        .map(|p| String::from_utf8_lossy(p.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

#[test]
fn counts_per_key_and_emits_one_output_per_input() {
    let mut driver = counting_driver();
    for (key, value) in [("a", "1"), ("b", "2"), ("a", "3")] {
        driver.pipe(Input::new("in", key, value));
    }
    assert_eq!(values(&driver, "out"), ["1:1", "2:1", "3:2"]);
    assert_eq!(
        driver.get(COUNTS_STORE, b"a").and_then(decode_count),
        Some(2)
    );
}

#[test]
fn a_refused_record_is_dead_lettered_with_its_reason_and_leaves_no_state() {
    let mut driver = counting_driver();
    driver.pipe(Input::new("in", "a", vec![0xff, 0xfe]));
    driver.pipe(Input::new("in", "a", "ok"));
    let dead = driver.dead_letters();
    assert_eq!(dead.len(), 1);
    let reason = dead[0]
        .headers
        .get_str(header::DLQ_REASON)
        .unwrap_or_default();
    assert!(reason.starts_with("cannot decode"), "{reason}");
    let source = dead[0]
        .headers
        .get_str(header::DLQ_SOURCE)
        .unwrap_or_default();
    assert_eq!(source, format!("in/{}/0", dead[0].partition));
    assert_eq!(values(&driver, "out"), ["ok:1"]);
}

#[test]
fn restart_restores_committed_state() {
    let mut driver = counting_driver();
    for i in 0..50 {
        driver.pipe(Input::new("in", format!("k{}", i % 7), i.to_string()));
    }
    driver.restart();
    driver.pipe(Input::new("in", "k0", "x"));
    // k0 saw inputs 0, 7, ..., 49: eight of them before the restart.
    assert_eq!(
        driver.get(COUNTS_STORE, b"k0").and_then(decode_count),
        Some(9)
    );
}

#[test]
fn outputs_inherit_causation_and_correlation() {
    let mut driver = counting_driver();
    driver.pipe(
        Input::new("in", "a", "1")
            .header(header::EVENT_ID, "e-1")
            .header(header::TRACEPARENT, "00-abc-def-01"),
    );
    driver.pipe(
        Input::new("in", "a", "2")
            .header(header::EVENT_ID, "e-2")
            .header(header::CORRELATION_ID, "c-0"),
    );
    let out = driver.records("out");
    assert_eq!(out[0].headers.get_str(header::CAUSATION_ID), Some("e-1"));
    assert_eq!(out[0].headers.get_str(header::CORRELATION_ID), Some("e-1"));
    assert_eq!(
        out[0].headers.get_str(header::TRACEPARENT),
        Some("00-abc-def-01")
    );
    assert_eq!(out[1].headers.get_str(header::CAUSATION_ID), Some("e-2"));
    assert_eq!(out[1].headers.get_str(header::CORRELATION_ID), Some("c-0"));
}

/// Sets a timer per record (`wall:<delay ms>`, `event:<delay ms>` or
/// `either:<delay ms>`, the last two from the record's timestamp) and emits
/// the key when it fires; `cancel` cancels the key's wall timer.
struct Reminder;

impl Processor for Reminder {
    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let key = record.key.clone().unwrap_or_default();
        let value =
            String::from_utf8_lossy(record.value.as_deref().unwrap_or_default()).into_owned();
        let handle = |domain| callstream_runtime::TimerHandle {
            domain,
            name: "remind".into(),
            key: key.clone(),
        };
        match value.split_once(':') {
            Some(("wall", ms)) => {
                let ms: i64 = ms
                    .parse()
                    .map_err(|_| ProcessError::Invalid(value.clone()))?;
                ctx.set_timer(
                    TimeDomain::WallClock,
                    "remind",
                    key.clone(),
                    ctx.wall_clock_ms() + ms,
                    b"w",
                );
            }
            Some(("event", ms)) => {
                let ms: i64 = ms
                    .parse()
                    .map_err(|_| ProcessError::Invalid(value.clone()))?;
                ctx.set_timer(
                    TimeDomain::EventTime,
                    "remind",
                    key.clone(),
                    record.timestamp_ms + ms,
                    b"e",
                );
            }
            Some(("either", ms)) => {
                let ms: i64 = ms
                    .parse()
                    .map_err(|_| ProcessError::Invalid(value.clone()))?;
                ctx.set_timer(
                    TimeDomain::Either,
                    "remind",
                    key.clone(),
                    record.timestamp_ms + ms,
                    b"x",
                );
            }
            _ if value == "cancel" => ctx.cancel_timer(&handle(TimeDomain::WallClock)),
            _ => {}
        }
        Ok(())
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        ctx.emit(Output::new(
            "fired",
            timer.handle.key.clone(),
            timer.payload.clone(),
        ));
        Ok(())
    }
}

fn reminder_driver() -> TestDriver<Reminder> {
    TestDriver::new(
        Reminder,
        ProcessorSpec::new("reminder", "dlq").input("in"),
        3,
        START,
    )
}

#[test]
fn wall_clock_timers_fire_when_the_clock_passes_them_without_any_record() {
    let mut driver = reminder_driver();
    driver.pipe(Input::new("in", "a", "wall:1000"));
    driver.pipe(Input::new("in", "b", "wall:3000"));
    driver.advance_wall_clock_ms(999);
    assert!(driver.records("fired").is_empty());
    driver.advance_wall_clock_ms(1);
    assert_eq!(driver.records("fired").len(), 1);
    driver.advance_wall_clock_ms(5000);
    let keys: Vec<_> = driver
        .records("fired")
        .iter()
        .map(|p| p.key.clone())
        .collect();
    assert_eq!(keys, [Some(b"a".to_vec()), Some(b"b".to_vec())]);
    assert_eq!(driver.open_timers(), 0);
}

#[test]
fn event_time_timers_follow_stream_time_not_the_wall_clock() {
    let mut driver = reminder_driver();
    driver.pipe(Input::new("in", "a", "event:1000").at(START));
    driver.advance_wall_clock_ms(60_000);
    assert!(
        driver.records("fired").is_empty(),
        "wall clock must not fire event-time timers"
    );
    // Another record on the same key's partition moves stream time past the deadline.
    driver.pipe(Input::new("in", "a", "noop").at(START + 1000));
    assert_eq!(driver.records("fired").len(), 1);
}

#[test]
fn a_cancelled_timer_never_fires_and_a_reset_timer_moves() {
    let mut driver = reminder_driver();
    driver.pipe(Input::new("in", "a", "wall:1000"));
    driver.pipe(Input::new("in", "a", "cancel"));
    driver.pipe(Input::new("in", "b", "wall:1000"));
    driver.pipe(Input::new("in", "b", "wall:5000"));
    driver.advance_wall_clock_ms(2000);
    assert!(driver.records("fired").is_empty());
    driver.advance_wall_clock_ms(3000);
    assert_eq!(driver.records("fired").len(), 1);
}

#[test]
fn timers_survive_a_restart_and_fire_when_due_after_it() {
    let mut driver = reminder_driver();
    driver.pipe(Input::new("in", "a", "wall:1000"));
    driver.pipe(Input::new("in", "b", "event:500").at(START));
    driver.restart();
    assert_eq!(driver.open_timers(), 2);
    // Due while "down": fires as soon as the clock is looked at after restore.
    driver.advance_wall_clock_ms(10_000);
    assert_eq!(driver.records("fired").len(), 1);
    // Stream time was restored too: a later record on b's partition fires b's timer.
    driver.pipe(Input::new("in", "b", "noop").at(START + 500));
    assert_eq!(driver.records("fired").len(), 2);
}

#[test]
fn a_timer_of_either_clock_fires_once_on_whichever_passes_it_first() {
    let mut driver = reminder_driver();
    // Stream time first: a later record passes the deadline before the wall clock does.
    driver.pipe(Input::new("in", "a", "either:1000").at(START + 5_000));
    driver.pipe(Input::new("in", "a", "noop").at(START + 6_000));
    assert_eq!(driver.records("fired").len(), 1);
    driver.advance_wall_clock_ms(60_000);
    assert_eq!(
        driver.records("fired").len(),
        1,
        "fired once, not again by the wall clock"
    );
    // The wall clock first: nothing else arrives on the partition.
    let now = callstream_runtime::Clock::now_ms(driver.clock());
    driver.pipe(Input::new("in", "b", "either:1000").at(now));
    assert_eq!(driver.open_timers(), 1);
    driver.restart();
    assert_eq!(driver.open_timers(), 1, "one timer, restored once");
    driver.advance_wall_clock_ms(999);
    assert_eq!(driver.records("fired").len(), 1);
    driver.advance_wall_clock_ms(1);
    assert_eq!(driver.records("fired").len(), 2);
    assert_eq!(driver.open_timers(), 0);
}

/// Asks for one effect per record (unless the global table `control` says
/// `paused`), and emits what the effect returned.
struct Caller;

impl Processor for Caller {
    fn stores(&self) -> &'static [&'static str] {
        &["ops"]
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        if ctx.global("control", b"mode") == Some(&b"paused"[..]) {
            ctx.emit(Output::new(
                "out",
                record.key.clone().unwrap_or_default(),
                "held",
            ));
            return Ok(());
        }
        let key = record.key.clone().unwrap_or_default();
        ctx.put("ops", key.clone(), b"dispatching".to_vec());
        ctx.request_effect(
            key,
            format!("op-{}", record.offset),
            record.value.clone().unwrap_or_default(),
        );
        Ok(())
    }

    fn on_effect(
        &mut self,
        ctx: &mut Context<'_>,
        result: &callstream_runtime::EffectResult,
    ) -> Result<(), ProcessError> {
        ctx.put("ops", result.request.key.clone(), b"done".to_vec());
        ctx.emit(Output::new(
            "out",
            result.request.key.clone(),
            result.payload.clone(),
        ));
        Ok(())
    }
}

#[test]
fn effects_come_back_to_their_key_and_globals_steer_processing() {
    let spec = ProcessorSpec::new("caller", "dlq")
        .input("in")
        .global_table("control");
    let mut driver = TestDriver::new(Caller, spec, 4, START);
    driver.pipe(Input::new("in", "a", "dial"));
    assert_eq!(driver.get("ops", b"a"), Some(&b"dispatching"[..]));
    let effects = driver.take_effects();
    assert_eq!(effects.len(), 1);
    assert_eq!(effects[0].payload, b"dial");
    driver.complete_effect(effects[0].clone(), b"accepted".to_vec());
    assert_eq!(driver.get("ops", b"a"), Some(&b"done"[..]));
    assert_eq!(values_of(&driver.records("out")), ["accepted"]);

    driver.set_global("control", "mode", Some(b"paused".to_vec()));
    driver.pipe(Input::new("in", "b", "dial"));
    assert!(driver.pending_effects().is_empty());
    driver.set_global("control", "mode", None);
    driver.pipe(Input::new("in", "b", "dial"));
    assert_eq!(driver.pending_effects().len(), 1);
    assert_eq!(values_of(&driver.records("out")), ["accepted", "held"]);
}

fn values_of(produced: &[&callstream_runtime::Produced]) -> Vec<String> {
    produced
        .iter()
        .map(|p| String::from_utf8_lossy(p.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}
