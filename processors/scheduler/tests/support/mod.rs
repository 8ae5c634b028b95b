//! Builders shared by the scheduler's driver and broker tests.
#![allow(dead_code)] // each test binary uses part of it

pub mod kit;

use std::collections::BTreeMap;

use callstream_control::diff::{change_events, plan_changes, ApplyMeta};
use callstream_control::ControlFile;
use callstream_e2e::fixtures;
use callstream_schemas::{
    Actor, ControlChange, ScheduleRequest, ScheduleRequestKind, Timestamp, ZoneSource,
};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// The control changes a TOML control file amounts to on an empty table.
pub fn control_changes(toml: &str) -> Vec<ControlChange> {
    let file = ControlFile::parse(toml).expect("test control file is valid");
    let plan = plan_changes(&file.desired(), &file.scope(), &BTreeMap::new());
    change_events(
        &plan,
        &ApplyMeta {
            apply_id: Uuid::from_u128(1),
            actor: Actor::operator("test"),
            at: DateTime::from_timestamp_millis(0).unwrap_or_default(),
            reason: None,
        },
    )
}

pub fn at_ms(ms: i64) -> Timestamp {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default()
}

/// A plan request for job `job` of `contact`, no earlier than `earliest_ms`.
pub fn plan(tenant: &str, job: u128, contact: &str, earliest_ms: i64) -> ScheduleRequest {
    let at = at_ms(earliest_ms);
    ScheduleRequest {
        event_id: fixtures::id(&format!("plan/{tenant}/{job}")),
        correlation_id: Some(Uuid::from_u128(job + 1_000_000)),
        requested_at: Some(at),
        time_zone_source: Some(ZoneSource::Contact),
        ..fixtures::schedule_plan(tenant, contact, "enrolment", Uuid::from_u128(job), at)
    }
}

/// A cancel of job `job` with `reason`.
pub fn cancel(tenant: &str, job: u128, contact: &str, reason: &str) -> ScheduleRequest {
    ScheduleRequest {
        event_id: fixtures::id(&format!("cancel/{tenant}/{job}")),
        kind: ScheduleRequestKind::Cancel,
        earliest_at: None,
        requested_at: None,
        time_zone: None,
        time_zone_source: None,
        reason: reason.into(),
        reason_detail: Some("the lead asked not to be called".into()),
        ..plan(tenant, job, contact, 0)
    }
}
