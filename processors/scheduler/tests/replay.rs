//! Replays on the in-memory driver: restarts mid-stream (with a cold grid
//! cache, as a new instance has) change no output, and the same input
//! gives the same event ids.

mod support;

use callstream_runtime::TestDriver;
use callstream_scheduler::Scheduler;
use callstream_schemas::ScheduleEvent;
use support::kit::*;
use support::{cancel, plan};

/// The same stream, with or without restarts (and a cold cache) on the way.
fn scenario(restart_every: Option<usize>) -> Vec<(String, Vec<u8>)> {
    let mut d = driver();
    let mut step = 0;
    let mut maybe_restart = |d: &mut TestDriver<Scheduler>| {
        step += 1;
        if restart_every.is_some_and(|n| step % n == 0) {
            d.processor().forget_cache();
            d.restart();
        }
    };
    for job in 1..=40u128 {
        let tenant = if job % 3 == 0 { "beta" } else { "acme" };
        let earliest = start() + (job as i64 % 5) * 200_000;
        send(&mut d, &plan(tenant, job, &format!("lead-{job}"), earliest));
        maybe_restart(&mut d);
        if job % 7 == 0 {
            send(
                &mut d,
                &cancel(tenant, job - 2, &format!("lead-{}", job - 2), "operator"),
            );
            maybe_restart(&mut d);
        }
        if job % 5 == 0 {
            d.advance_wall_clock_ms(150_000);
            maybe_restart(&mut d);
        }
    }
    d.advance_wall_clock_ms(86_400_000);
    ["schedule-events", "contact-commands", "exceptions"]
        .iter()
        .flat_map(|topic| {
            d.records(topic)
                .into_iter()
                .map(|p| (topic.to_string(), p.value.clone().unwrap_or_default()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_restart_mid_stream_keeps_the_grid_and_the_timers_and_changes_no_output() {
    let straight = scenario(None);
    let due = straight
        .iter()
        .filter(|(t, _)| t == "contact-commands")
        .count();
    assert!(due > 30, "most jobs launch: {due}");
    for every in [1, 3, 7] {
        assert_eq!(
            scenario(Some(every)),
            straight,
            "restarting every {every} steps"
        );
    }
}

#[test]
fn the_same_input_gives_the_same_event_ids() {
    let first = schedule_events(&{
        let mut d = driver();
        send(&mut d, &plan("acme", 1, "lead-1", start()));
        d.advance_wall_clock_ms(3_600_000);
        d
    });
    let second = schedule_events(&{
        let mut d = driver();
        send(&mut d, &plan("acme", 1, "lead-1", start()));
        d.advance_wall_clock_ms(3_600_000);
        d
    });
    assert_eq!(first.len(), 2);
    let ids = |events: &[ScheduleEvent]| events.iter().map(|e| e.event_id).collect::<Vec<_>>();
    assert_eq!(ids(&first), ids(&second));
    assert!(first.iter().all(|e| e.event_id.get_version_num() == 5));
}
