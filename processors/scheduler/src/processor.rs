//! The scheduler processor: `schedule-requests` in (keyed by tenant, so
//! the partition that owns a tenant is the only writer of its grid), with
//! `control` as a global table; schedule events, LaunchDue commands and
//! exceptions out, exactly once with the state.
//!
//! - `plan`: the job gets the first free slot at or after its earliest
//!   time inside its calling window (moved to the next opening plus the
//!   campaign's buffer if it was outside), a durable wall-clock timer at
//!   the slot's time, and an `allocated` event; or, when nothing is free
//!   within the horizon, a `refused` event and a `no_slot` exception.
//! - `cancel`: frees the slot, cancels the timer, `cancelled` event with
//!   the request's reason.
//! - the timer: `LaunchDue` to `contact-commands` (keyed by contact) and a
//!   `launch_due` event.
//!
//! A request for a job id the scheduler already knows changes nothing and
//! emits nothing. Ids are UUIDv5 over their cause, so a replay repeats them.

use callstream_kit::control::ControlTable;
use callstream_runtime::{
    Context, ProcessError, Processor, Record, TimeDomain, Timer, TimerHandle,
};
use callstream_schemas::{Event, ScheduleEventKind, ScheduleRequest, ScheduleRequestKind};
use chrono::{DateTime, TimeDelta, Utc};

use crate::config::SchedulerConfig;
use crate::emit::{self, Decision};
use crate::grid_store::{GridCache, GRID_STORE};
use crate::jobs::{self, Job, JobState};
use crate::placement::{self, lead_window, place_job, Outcome, Timing};
use callstream_domain::ids::scheduler as ids;

/// Every store the scheduler declares (`Processor::stores`): the slot grid
/// and the jobs.
pub const STORES: &[&str] = &[GRID_STORE, jobs::JOBS_STORE];

/// Timer names.
pub const LAUNCH_TIMER: &str = "launch";
pub const FORGET_TIMER: &str = "forget";

/// The scheduler. Its fields are configuration and caches; the grid and
/// the jobs live in the stores.
pub struct Scheduler {
    config: SchedulerConfig,
    control: ControlTable,
    grids: GridCache,
}

impl Scheduler {
    pub fn new(config: SchedulerConfig) -> Self {
        Self {
            control: ControlTable::new(&config.control),
            config,
            grids: GridCache::default(),
        }
    }

    /// Drops the in-memory grids, as a freshly started instance has none:
    /// the next request rebuilds them from the stores.
    pub fn forget_cache(&mut self) {
        self.grids.clear();
    }

    fn emit<E: Event>(
        &self,
        ctx: &mut Context<'_>,
        topic: &str,
        key: &str,
        event: &E,
    ) -> Result<(), ProcessError> {
        ctx.emit(emit::output(topic, key, event)?);
        Ok(())
    }

    fn forget_later(&self, ctx: &mut Context<'_>, key: &[u8], from_ms: i64) {
        let retention = i64::try_from(self.config.job_retention.as_millis()).unwrap_or(i64::MAX);
        ctx.set_timer(
            TimeDomain::WallClock,
            FORGET_TIMER,
            key.to_vec(),
            from_ms.saturating_add(retention),
            [],
        );
    }

    fn plan(
        &mut self,
        ctx: &mut Context<'_>,
        request: &ScheduleRequest,
    ) -> Result<(), ProcessError> {
        let tenant = request.tenant_id.as_str();
        let key = jobs::job_key(tenant, request.job_id);
        if let Some(job) = jobs::load(ctx, &key)? {
            tracing::debug!(tenant, job = %job.job_id, state = ?job.state, "duplicate plan request; nothing changes");
            return Ok(());
        }
        let now_ms = ctx.wall_clock_ms();
        let now = millis(now_ms)?;
        let (campaign, grid_settings, calling_rules) = {
            let view = self.control.view(ctx);
            (
                view.campaign(tenant, &request.campaign_id),
                view.grid(tenant),
                view.calling_rules(tenant, &request.campaign_id),
            )
        };
        let decision_id = ids::derived("schedule_decision", request.event_id);
        let mut job = Job::from_request(request, decision_id);
        let mut note = None;
        let outcome = match (
            request.earliest_at,
            lead_window(
                request,
                &campaign,
                grid_settings.default_zone,
                &calling_rules.rules,
            ),
        ) {
            (None, _) => Outcome::Refused {
                reason: placement::reason::INVALID_REQUEST.into(),
                detail: "a plan request needs earliest_at".to_owned(),
            },
            (_, Err(unusable)) => Outcome::Refused {
                reason: unusable.reason.into(),
                detail: unusable.detail,
            },
            (Some(earliest), Ok(lead)) => {
                job.time_zone = Some(lead.zone_name);
                job.time_zone_source = Some(lead.source);
                note = lead.note;
                let cached = self.grids.load(ctx, tenant, grid_settings.config)?;
                let timing = Timing {
                    earliest,
                    now,
                    horizon: self.config.horizon,
                    move_buffer: campaign.move_buffer,
                };
                let outcome = place_job(
                    &mut cached.grid,
                    request.job_id,
                    &lead.window,
                    lead.rules.as_ref(),
                    timing,
                );
                if let Outcome::Allocated { slot, .. } = &outcome {
                    cached.save(ctx, tenant, &[slot.index]);
                }
                outcome
            }
        };
        let with_note = |detail: String| match &note {
            Some(note) if detail.is_empty() => note.clone(),
            Some(note) => format!("{detail}; {note}"),
            None => detail,
        };
        match outcome {
            Outcome::Allocated {
                slot,
                reason,
                detail,
            } => {
                let slot_ms = slot.start.timestamp_millis();
                job.state = JobState::Booked;
                job.slot = Some(slot.index);
                job.slot_at_ms = Some(slot_ms);
                jobs::save(ctx, &key, &job)?;
                ctx.set_timer(
                    TimeDomain::WallClock,
                    LAUNCH_TIMER,
                    key.clone(),
                    slot_ms,
                    [],
                );
                let event = emit::schedule_event(
                    &job,
                    Decision {
                        kind: ScheduleEventKind::Allocated,
                        event_id: decision_id,
                        causation_id: Some(request.event_id),
                        correlation_id: job.correlation_id,
                        occurred_at: now,
                        reason: &reason,
                        detail: Some(with_note(detail)),
                    },
                );
                self.emit(ctx, &self.config.schedule_events, tenant, &event)?;
            }
            Outcome::Refused { reason, detail } => {
                let detail = with_note(detail);
                job.state = JobState::Refused;
                jobs::save(ctx, &key, &job)?;
                self.forget_later(ctx, &key, now_ms);
                let event = emit::schedule_event(
                    &job,
                    Decision {
                        kind: ScheduleEventKind::Refused,
                        event_id: decision_id,
                        causation_id: Some(request.event_id),
                        correlation_id: job.correlation_id,
                        occurred_at: now,
                        reason: &reason,
                        detail: Some(detail.clone()),
                    },
                );
                self.emit(ctx, &self.config.schedule_events, tenant, &event)?;
                let exception =
                    emit::no_slot_exception(&job, request.event_id, now, &reason, &detail);
                self.emit(ctx, &self.config.exceptions, &job.contact_id, &exception)?;
                tracing::info!(tenant, job = %job.job_id, reason = %reason, "schedule request refused");
            }
            Outcome::AlreadyBooked(slot) => {
                tracing::warn!(tenant, job = %request.job_id, slot = slot.index, "job on the grid without a job record");
            }
        }
        Ok(())
    }

    fn cancel(
        &mut self,
        ctx: &mut Context<'_>,
        request: &ScheduleRequest,
    ) -> Result<(), ProcessError> {
        let tenant = request.tenant_id.as_str();
        let key = jobs::job_key(tenant, request.job_id);
        let Some(mut job) = jobs::load(ctx, &key)? else {
            tracing::info!(tenant, job = %request.job_id, "cancel of a job the scheduler does not know; nothing to do");
            return Ok(());
        };
        if job.state != JobState::Booked {
            tracing::debug!(tenant, job = %job.job_id, state = ?job.state, "cancel of a job that holds no slot; nothing to do");
            return Ok(());
        }
        let event_id = ids::derived("cancelled", request.event_id);
        let config = self.control.view(ctx).grid(tenant).config;
        let cached = self.grids.load(ctx, tenant, config)?;
        if let Some(slot) = cached.grid.cancel(job.job_id) {
            cached.save(ctx, tenant, &[slot.index]);
        }
        ctx.cancel_timer(&TimerHandle {
            domain: TimeDomain::WallClock,
            name: LAUNCH_TIMER.to_owned(),
            key: key.clone(),
        });
        let now_ms = ctx.wall_clock_ms();
        job.state = JobState::Cancelled;
        jobs::save(ctx, &key, &job)?;
        self.forget_later(ctx, &key, now_ms);
        let event = emit::schedule_event(
            &job,
            Decision {
                kind: ScheduleEventKind::Cancelled,
                event_id,
                causation_id: Some(request.event_id),
                correlation_id: request.correlation_id.or(Some(request.event_id)),
                occurred_at: millis(now_ms)?,
                reason: &request.reason,
                detail: request.reason_detail.clone(),
            },
        );
        self.emit(ctx, &self.config.schedule_events, tenant, &event)
    }

    fn launch(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        let key = timer.handle.key.as_slice();
        let Some(mut job) = jobs::load(ctx, key)? else {
            return Ok(());
        };
        let (JobState::Booked, Some(slot)) = (job.state, job.slot) else {
            return Ok(());
        };
        let due = millis(timer.due_ms)?;
        let command = emit::launch_due(&job, slot, due);
        self.emit(
            ctx,
            &self.config.contact_commands,
            &job.contact_id,
            &command,
        )?;
        let event_id = ids::for_slot("launch_due", &job.tenant_id, job.job_id, slot);
        let event = emit::schedule_event(
            &job,
            Decision {
                kind: ScheduleEventKind::LaunchDue,
                event_id,
                causation_id: Some(job.decision_event_id),
                correlation_id: job.correlation_id,
                occurred_at: due,
                reason: "slot_due",
                detail: None,
            },
        );
        let tenant = job.tenant_id.clone();
        self.emit(ctx, &self.config.schedule_events, &tenant, &event)?;
        job.state = JobState::Launched;
        jobs::save(ctx, key, &job)?;
        self.forget_later(ctx, key, timer.due_ms.max(ctx.wall_clock_ms()));
        // Slots well in the past can never be allocated again: drop them.
        let lag = TimeDelta::from_std(self.config.prune_lag).unwrap_or(TimeDelta::MAX);
        let cutoff = millis(ctx.wall_clock_ms())?
            .checked_sub_signed(lag)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let config = self.control.view(ctx).grid(&tenant).config;
        let cached = self.grids.load(ctx, &tenant, config)?;
        let pruned = cached.prune_chunks_before(ctx, &tenant, cutoff);
        if pruned > 0 {
            tracing::debug!(tenant, pruned, "past slots dropped from the grid");
        }
        Ok(())
    }
}

fn millis(ms: i64) -> Result<DateTime<Utc>, ProcessError> {
    DateTime::from_timestamp_millis(ms)
        .ok_or_else(|| ProcessError::Invalid(format!("time {ms} ms is out of range")))
}

impl Processor for Scheduler {
    fn stores(&self) -> &'static [&'static str] {
        STORES
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let Some(value) = record.value.as_deref() else {
            return Err(ProcessError::Invalid(
                "a schedule request without a value".into(),
            ));
        };
        let request =
            ScheduleRequest::decode(value).map_err(|e| ProcessError::Decode(e.to_string()))?;
        // The partition of the record key owns the grid: a request keyed
        // by anything but its tenant would write a grid another partition owns.
        if record.key.as_deref() != Some(request.tenant_id.as_bytes()) {
            return Err(ProcessError::Invalid(format!(
                "schedule request for tenant {:?} is not keyed by its tenant",
                request.tenant_id
            )));
        }
        match request.kind {
            ScheduleRequestKind::Plan => self.plan(ctx, &request),
            ScheduleRequestKind::Cancel => self.cancel(ctx, &request),
            ScheduleRequestKind::Unknown => Err(ProcessError::Invalid(
                "unknown schedule request kind".into(),
            )),
        }
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        match timer.handle.name.as_str() {
            LAUNCH_TIMER => self.launch(ctx, timer),
            FORGET_TIMER => {
                ctx.delete(jobs::JOBS_STORE, timer.handle.key.clone());
                Ok(())
            }
            other => {
                tracing::warn!(timer = other, "unknown timer; ignored");
                Ok(())
            }
        }
    }
}
