//! The scheduler on the runtime's in-memory driver, one test per branch:
//! allocation in the window, a move out of the window with the buffer, a
//! refusal at the horizon, a cancel that frees its slot, LaunchDue at the
//! slot's time by the wall clock, duplicates, tenants apart, control
//! changes and refused input.

mod support;

use callstream_runtime::{header, Input};
use callstream_schemas::{
    ContactCommand, ContactCommandKind, Event, ExceptionEvent, ExceptionType, ScheduleEventKind,
    ZoneSource,
};
use support::kit::*;
use support::{cancel, control_changes, plan};

#[test]
fn a_request_in_its_window_gets_the_first_slot_at_or_after_its_earliest_time() {
    let mut d = driver();
    let earliest = start() + 3_600_000;
    send(&mut d, &plan("acme", 1, "lead-1", earliest));
    let events = schedule_events(&d);
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.kind, ScheduleEventKind::Allocated);
    assert_eq!(e.reason, "allocated");
    assert!(slot_ms(e) >= earliest && slot_ms(e) < earliest + SLOT_MS);
    assert_eq!(
        slot_ms(e),
        callstream_domain::slot_grid::GRID_EPOCH_UNIX_SECONDS * 1000 + e.slot.unwrap() * SLOT_MS
    );
    assert_eq!(e.time_zone.as_deref(), Some("America/Chicago"));
    assert_eq!(e.time_zone_source, Some(ZoneSource::Contact));
    assert_eq!(e.requested_at.map(|t| t.timestamp_millis()), Some(earliest));
    let request = plan("acme", 1, "lead-1", earliest);
    assert_eq!(e.causation_id, Some(request.event_id));
    assert_eq!(e.correlation_id, request.correlation_id);
    // Keyed by tenant; the event id is in the headers for causation downstream.
    let out = d.records("schedule-events");
    assert_eq!(out[0].key.as_deref(), Some(&b"acme"[..]));
    assert_eq!(
        out[0].headers.get_str(header::EVENT_ID),
        Some(e.event_id.to_string().as_str())
    );
    assert_eq!(d.open_timers(), 1);
}

#[test]
fn a_saturday_request_moves_to_monday_opening_plus_the_buffer() {
    let mut d = driver();
    send(&mut d, &plan("acme", 1, "lead-1", chicago_ms(8, 11, 0)));
    let e = &schedule_events(&d)[0];
    assert_eq!(
        (e.kind, e.reason.as_str()),
        (ScheduleEventKind::Allocated, "moved_out_of_window")
    );
    let monday_9_15 = chicago_ms(10, 9, 15);
    assert!(
        slot_ms(e) >= monday_9_15 && slot_ms(e) < monday_9_15 + SLOT_MS,
        "{e:?}"
    );
    let detail = e.reason_detail.as_deref().unwrap();
    assert!(
        detail.contains("outside the calling window") && detail.contains("15 min"),
        "{detail}"
    );
}

#[test]
fn no_free_slot_within_the_horizon_is_refused_with_an_exception() {
    let mut d = driver_with(|c| c.horizon = std::time::Duration::from_secs(600), CONTROL);
    // Ten minutes hold eight 75 s slots (nine with a boundary); the tenth request cannot fit.
    for job in 1..=10 {
        send(&mut d, &plan("acme", job, &format!("lead-{job}"), start()));
    }
    let allocated = of_kind(&d, ScheduleEventKind::Allocated);
    let refused = of_kind(&d, ScheduleEventKind::Refused);
    assert!(
        allocated.len() >= 8 && allocated.len() < 10,
        "{}",
        allocated.len()
    );
    assert_eq!(allocated.len() + refused.len(), 10);
    assert_eq!(refused[0].reason, "no_free_slot");
    assert_eq!(refused[0].slot, None);
    let exceptions: Vec<ExceptionEvent> = d.outputs("exceptions");
    assert_eq!(exceptions.len(), refused.len());
    assert_eq!(exceptions[0].exception_type, ExceptionType::NoSlot);
    assert_eq!(exceptions[0].job_id, Some(refused[0].job_id));
    assert_eq!(
        d.records("exceptions")[0].key.as_deref(),
        Some(refused[0].contact_id.as_bytes())
    );
    // Slots are distinct: never two jobs in one slot of capacity one.
    let mut slots: Vec<i64> = allocated.iter().map(|e| e.slot.unwrap()).collect();
    slots.dedup();
    assert_eq!(slots.len(), allocated.len());
}

#[test]
fn a_cancel_frees_the_slot_and_its_timer() {
    let mut d = driver();
    send(&mut d, &plan("acme", 1, "lead-1", soon()));
    send(&mut d, &plan("acme", 2, "lead-2", soon()));
    send(&mut d, &cancel("acme", 1, "lead-1", "do_not_call"));
    let cancelled = of_kind(&d, ScheduleEventKind::Cancelled);
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0].reason, "do_not_call");
    let first_slot = of_kind(&d, ScheduleEventKind::Allocated)[0].slot;
    assert_eq!(cancelled[0].slot, first_slot);
    // The freed slot goes to the next request for that time.
    send(&mut d, &plan("acme", 3, "lead-3", soon()));
    assert_eq!(
        of_kind(&d, ScheduleEventKind::Allocated)[2].slot,
        first_slot
    );
    // A second cancel changes nothing.
    send(&mut d, &cancel("acme", 1, "lead-1", "do_not_call"));
    assert_eq!(of_kind(&d, ScheduleEventKind::Cancelled).len(), 1);
    d.advance_wall_clock_ms(3_600_000);
    let due: Vec<_> = of_kind(&d, ScheduleEventKind::LaunchDue)
        .iter()
        .map(|e| e.job_id.as_u128())
        .collect();
    assert_eq!(due, [3, 2]);
}

#[test]
fn launch_due_goes_out_at_the_slot_time_by_the_wall_clock() {
    let mut d = driver();
    let earliest = start() + 600_000;
    send(&mut d, &plan("acme", 7, "lead-7", earliest));
    let allocated = &of_kind(&d, ScheduleEventKind::Allocated)[0];
    let due_in = slot_ms(allocated) - start();
    d.advance_wall_clock_ms(due_in - 1);
    assert!(d.records("contact-commands").is_empty());
    d.advance_wall_clock_ms(1);
    let commands: Vec<ContactCommand> = d.outputs("contact-commands");
    assert_eq!(commands.len(), 1);
    let c = &commands[0];
    assert_eq!(c.kind, ContactCommandKind::LaunchDue);
    assert_eq!(c.job_id, Some(allocated.job_id));
    assert_eq!(c.slot, allocated.slot);
    assert_eq!(c.slot_at, allocated.slot_at);
    assert_eq!(c.campaign_id.as_deref(), Some("enrolment"));
    assert_eq!(c.origin, Some(allocated.origin));
    assert_eq!(c.causation_id, Some(allocated.event_id));
    assert_eq!(
        d.records("contact-commands")[0].key.as_deref(),
        Some(&b"lead-7"[..])
    );
    let due = of_kind(&d, ScheduleEventKind::LaunchDue);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].occurred_at, allocated.slot_at.unwrap());
    // Only the forget timer of the launched job is left; a late duplicate changes nothing.
    send(&mut d, &plan("acme", 7, "lead-7", earliest));
    d.advance_wall_clock_ms(3_600_000);
    assert_eq!(d.records("contact-commands").len(), 1);
    assert_eq!(schedule_events(&d).len(), 2);
}

#[test]
fn duplicate_requests_change_nothing() {
    let mut d = driver();
    let request = plan("acme", 1, "lead-1", soon());
    send(&mut d, &request);
    send(&mut d, &request);
    // Same job id under another event id: still the same job.
    let mut again = request.clone();
    again.event_id = uuid::Uuid::from_u128(99);
    again.earliest_at = Some(support::at_ms(soon() + 7_200_000));
    send(&mut d, &again);
    assert_eq!(schedule_events(&d).len(), 1);
    assert_eq!(d.open_timers(), 1);
    assert!(d.dead_letters().is_empty());
}

#[test]
fn two_tenants_grids_do_not_interfere() {
    let mut d = driver();
    send(&mut d, &plan("acme", 1, "lead-1", soon()));
    send(&mut d, &plan("beta", 2, "lead-2", soon()));
    send(&mut d, &plan("acme", 3, "lead-3", soon()));
    let allocated = of_kind(&d, ScheduleEventKind::Allocated);
    let slot = |job: u128| {
        allocated
            .iter()
            .find(|e| e.job_id.as_u128() == job)
            .unwrap()
            .slot
            .unwrap()
    };
    assert_eq!(slot(1), slot(2), "each tenant has its own grid");
    assert_eq!(slot(3), slot(1) + 1);
    // A cancel in one tenant frees nothing in the other.
    send(&mut d, &cancel("beta", 2, "lead-2", "operator"));
    send(&mut d, &plan("acme", 4, "lead-4", soon()));
    assert_eq!(
        of_kind(&d, ScheduleEventKind::Allocated)[3].slot,
        Some(slot(1) + 2)
    );
}

#[test]
fn a_control_change_applies_from_the_next_request() {
    let mut d = driver();
    send(&mut d, &plan("acme", 1, "lead-1", soon()));
    send(&mut d, &plan("acme", 2, "lead-2", soon()));
    let doubled = CONTROL.replace("launches_per_slot = 1", "launches_per_slot = 2");
    for change in control_changes(&doubled) {
        d.set_global(
            "control",
            change.record_key(),
            Some(change.encode().unwrap()),
        );
    }
    send(&mut d, &plan("acme", 3, "lead-3", soon()));
    let slots: Vec<i64> = of_kind(&d, ScheduleEventKind::Allocated)
        .iter()
        .map(|e| e.slot.unwrap())
        .collect();
    assert_eq!(slots[1], slots[0] + 1);
    assert_eq!(
        slots[2], slots[0],
        "the first slot has room for a second launch now"
    );
}

#[test]
fn a_request_not_keyed_by_its_tenant_is_dead_lettered() {
    let mut d = driver();
    let request = plan("acme", 1, "lead-1", start());
    d.pipe(Input::new(
        "schedule-requests",
        "lead-1",
        request.encode().unwrap(),
    ));
    d.pipe(Input::new(
        "schedule-requests",
        "acme",
        b"not avro".to_vec(),
    ));
    assert_eq!(d.dead_letters().len(), 2);
    assert!(schedule_events(&d).is_empty());
}

/// Every permanent failure the registry (`callstream_domain::failures`) gives the
/// scheduler opens its exception.
#[test]
fn every_permanent_failure_of_the_scheduler_opens_an_exception() {
    use callstream_domain::failures::{Owner, PermanentFailure};
    use callstream_e2e::failures::{assert_opened, no_scenario};
    for failure in PermanentFailure::of(Owner::Scheduler) {
        let exceptions: Vec<ExceptionEvent> = match failure {
            PermanentFailure::NoSlot => {
                let mut d =
                    driver_with(|c| c.horizon = std::time::Duration::from_secs(60), CONTROL);
                // One minute holds no 75 s slot past its first: the second cannot fit.
                for job in 1..=2 {
                    send(&mut d, &plan("acme", job, &format!("lead-{job}"), start()));
                }
                d.outputs("exceptions")
            }
            other => no_scenario("the scheduler", other),
        };
        assert_opened(failure, &exceptions);
    }
}

/// A tenant's own calling rule from `control` (a control file's `calling_rules`, published
/// as `control apply` would): a one-a-day cap over the call placed an hour ago moves the plan
/// past the day, inside the window, naming the rule.
#[test]
fn a_tenants_own_cap_from_control_moves_a_plan_and_is_its_reason() {
    let control = format!(
        "{CONTROL}\n[tenants.acme.calling_rules]\n[[tenants.acme.calling_rules.rules]]\n\
         id = \"tenant:one_a_day\"\nkind = \"frequency_cap\"\nparams = \"max=1; window=24h\"\n"
    );
    let mut d = driver_with(|_| {}, &control);
    let placed = start() - 3_600_000;
    let mut request = plan("acme", 1, "lead-1", start());
    request.placed_calls = vec![support::at_ms(placed)];
    send(&mut d, &request);
    let allocated = of_kind(&d, ScheduleEventKind::Allocated);
    assert_eq!(allocated.len(), 1, "{allocated:?}");
    assert_eq!(allocated[0].reason, "tenant:one_a_day");
    assert!(allocated[0].slot_at.unwrap() >= support::at_ms(placed + 24 * 3_600_000));
    // Another tenant, no rule of its own: planned where asked.
    send(&mut d, &plan("beta", 2, "lead-2", start()));
    let beta = of_kind(&d, ScheduleEventKind::Allocated);
    assert_eq!(beta.last().unwrap().reason, "allocated");
}
