//! State written before the detector kept one timer of either clock per
//! contact: an older version set each deadline twice, as an event-time and
//! a wall-clock timer. Restored, such a pair still reports the launch once,
//! on time, and is replaced by the one timer at the contact's next turn.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed assertion

mod support;

use callstream_completion_detector::testkit::accepted_launch;
use callstream_completion_detector::Detector;
use callstream_platform::topics;
use callstream_runtime::{
    Context, Input, ProcessError, Processor, Record, TestDriver, TimeDomain, Timer, TimerHandle,
};
use callstream_schemas::{CompletionMissing, Event, MissingTrigger};
use support::*;

/// The detector, writing its contact timer as the older version did while
/// `legacy` is set.
struct Legacy {
    inner: Detector,
    legacy: bool,
}

fn handle(domain: TimeDomain, key: &[u8]) -> TimerHandle {
    TimerHandle {
        domain,
        name: "w".into(),
        key: key.to_vec(),
    }
}

impl Processor for Legacy {
    fn stores(&self) -> &'static [&'static str] {
        self.inner.stores()
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        self.inner.process(ctx, record)?;
        // The detector's key: tenant and contact (the record's key).
        let contact = String::from_utf8_lossy(record.key.as_deref().unwrap_or_default());
        let key = callstream_kit::keys::contact_key(TENANT, &contact);
        if let Some(due) = ctx.timer_due(&handle(TimeDomain::Either, &key)) {
            if self.legacy {
                ctx.cancel_timer(&handle(TimeDomain::Either, &key));
                for domain in [TimeDomain::EventTime, TimeDomain::WallClock] {
                    ctx.set_timer(domain, "w", key.clone(), due, []);
                }
            }
        }
        Ok(())
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        self.inner.on_timer(ctx, timer)
    }
}

fn missing_of(d: &TestDriver<Legacy>) -> Vec<CompletionMissing> {
    d.outputs(&name(topics::COMPLETION_MISSING))
}

#[test]
fn a_restored_pair_of_one_clock_timers_reports_once_and_becomes_one_timer() {
    let config = config();
    let spec = callstream_completion_detector::spec(&config.topics, "detector");
    let inner = callstream_completion_detector::processor(config);
    let mut d = TestDriver::new(
        Legacy {
            inner,
            legacy: true,
        },
        spec,
        PARTITIONS,
        T0,
    );
    let contact = "c";
    let value = accepted_launch(TENANT, contact, launch_id(1), &sid(1), T0)
        .encode()
        .unwrap();
    d.pipe(Input::new(name(topics::CALL_LAUNCHES), contact, value).at(T0));
    // The contact's pair, and the delivery monitor's bucket timer.
    assert_eq!(d.open_timers(), 3);

    d.processor().legacy = false;
    d.restart();
    assert_eq!(d.open_timers(), 3, "the pair is restored as it was written");
    d.advance_wall_clock_ms(W + GRACE - 1);
    assert!(missing_of(&d).is_empty());
    d.advance_wall_clock_ms(1);
    let m = missing_of(&d);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].trigger, MissingTrigger::WallClock);
    // The contact's turn replaced the pair with one timer (the late retention).
    assert_eq!(d.open_timers(), 2);
    // Stream time passing the old deadline reports nothing again.
    let neighbour = neighbour_of(contact);
    let value = accepted_launch(TENANT, &neighbour, launch_id(2), &sid(2), T0 + W + GRACE)
        .encode()
        .unwrap();
    d.pipe(Input::new(name(topics::CALL_LAUNCHES), &*neighbour, value).at(T0 + W + GRACE));
    d.advance_wall_clock_ms(60_000);
    assert_eq!(missing_of(&d).len(), 1, "reported once");
}
