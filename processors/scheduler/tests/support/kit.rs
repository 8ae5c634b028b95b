//! The scheduler on the in-memory driver, set up for the driver tests:
//! tenants `acme` (grid 75 s × 1, Chicago, weekdays 09-17, 15 min buffer)
//! and `beta`, starting on Friday 2024-06-07 10:00 in Chicago.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses part of it; its helpers unwrap

use callstream_platform::Topics;
use callstream_runtime::{header, Input, TestDriver};
use callstream_scheduler::{processor, spec, Scheduler, SchedulerConfig};
use callstream_schemas::{Event, ScheduleEvent, ScheduleEventKind, ScheduleRequest};
use chrono::TimeZone;
use chrono_tz::America::Chicago;

use super::control_changes;

pub const CONTROL: &str = r#"
[tenants.acme.grid]
slot_seconds = 75
launches_per_slot = 1
default_time_zone = "America/Chicago"

[tenants.acme.campaigns.enrolment]
windows = [{ days = "weekdays", start = "09:00", end = "17:00" }]
move_buffer_minutes = 15

[tenants.beta.grid]
default_time_zone = "America/Chicago"

[tenants.beta.campaigns.enrolment]
windows = [{ days = "weekdays", start = "09:00", end = "17:00" }]
"#;

pub const SLOT_MS: i64 = 75_000;

pub fn chicago_ms(d: u32, h: u32, m: u32) -> i64 {
    Chicago
        .with_ymd_and_hms(2024, 6, d, h, m, 0)
        .unwrap()
        .timestamp_millis()
}

/// Friday 2024-06-07 10:00 in Chicago.
pub fn start() -> i64 {
    chicago_ms(7, 10, 0)
}

/// Ten minutes after the start: a slot that is not due yet.
pub fn soon() -> i64 {
    start() + 600_000
}

pub fn driver_with(
    config: impl FnOnce(&mut SchedulerConfig),
    control: &str,
) -> TestDriver<Scheduler> {
    let topics = Topics::default();
    let mut scheduler_config = SchedulerConfig::new(&topics);
    config(&mut scheduler_config);
    let mut driver = TestDriver::new(
        processor(scheduler_config),
        spec(&topics, "scheduler"),
        4,
        start(),
    );
    for change in control_changes(control) {
        driver.set_global(
            "control",
            change.record_key(),
            Some(change.encode().unwrap()),
        );
    }
    driver
}

pub fn driver() -> TestDriver<Scheduler> {
    driver_with(|_| {}, CONTROL)
}

pub fn send(driver: &mut TestDriver<Scheduler>, request: &ScheduleRequest) {
    driver.pipe(
        Input::new(
            "schedule-requests",
            request.tenant_id.clone(),
            request.encode().unwrap(),
        )
        .header(header::EVENT_ID, request.event_id.to_string()),
    );
}

pub fn schedule_events(driver: &TestDriver<Scheduler>) -> Vec<ScheduleEvent> {
    driver.outputs("schedule-events")
}

pub fn of_kind(driver: &TestDriver<Scheduler>, kind: ScheduleEventKind) -> Vec<ScheduleEvent> {
    schedule_events(driver)
        .into_iter()
        .filter(|e| e.kind == kind)
        .collect()
}

pub fn slot_ms(event: &ScheduleEvent) -> i64 {
    event.slot_at.map(|t| t.timestamp_millis()).unwrap()
}
