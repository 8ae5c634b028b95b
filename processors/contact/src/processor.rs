//! The contact processor on the runtime: decodes the record, loads the
//! contact, runs the handler for its kind, and commits the new state, its
//! outputs and the pause re-check timer together.
//!
//! Guarantees (with the runtime's exactly-once engine): a record's outputs
//! and the state change they come from commit atomically with its offset;
//! a record that cannot be decoded, names another contact than its key, or
//! cannot be acted on goes to the dead letters with the reason and leaves
//! no trace; a record that changes nothing (a duplicate) writes nothing.

use callstream_runtime::{
    Context, ProcessError, Processor, Record, TimeDomain, Timer, TimerHandle,
};
use callstream_schemas::{CallEvent, CallLaunch, ContactCommand, Event};
use chrono::{DateTime, TimeDelta, Utc};
use uuid::Uuid;

use crate::config::{ContactConfig, CONTACTS_STORE, STORES};
use crate::control::ControlSource;
use crate::emit::Outbox;
use crate::jobs::Step;
use crate::state::{Cause, Contact};
use crate::telemetry::ContactMetrics;
use crate::{calls, commands, launch, outcomes, snapshot};

/// Name of the wall-clock timer that re-checks jobs held by a pause.
pub const PAUSE_RECHECK_TIMER: &str = "pause-recheck";

/// The contact processor.
pub struct ContactProcessor<C> {
    config: ContactConfig,
    control: C,
    metrics: ContactMetrics,
}

impl<C: ControlSource> ContactProcessor<C> {
    pub fn new(config: ContactConfig, control: C, metrics: ContactMetrics) -> Self {
        Self {
            config,
            control,
            metrics,
        }
    }

    pub fn config(&self) -> &ContactConfig {
        &self.config
    }
}

/// What one record or timer is about.
enum Input<'r> {
    Call(&'r CallEvent),
    Launch(&'r CallLaunch),
    Command(&'r ContactCommand),
    Recheck,
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

impl<C: ControlSource> ContactProcessor<C> {
    fn recheck_handle(key: &[u8]) -> TimerHandle {
        TimerHandle {
            domain: TimeDomain::WallClock,
            name: PAUSE_RECHECK_TIMER.to_owned(),
            key: key.to_vec(),
        }
    }

    /// Runs one input against the stored contact and commits the outcome.
    fn run(
        &mut self,
        ctx: &mut Context<'_>,
        tenant: &str,
        contact_id: &str,
        cause: Cause,
        at: DateTime<Utc>,
        input: Input<'_>,
    ) -> Result<(), ProcessError> {
        let key = Contact::store_key(tenant, contact_id);
        let stored: Option<Contact> = ctx
            .get_json(CONTACTS_STORE, &key)
            .map_err(|e| ProcessError::Invalid(format!("stored contact unreadable: {e}")))?;
        if stored.is_none() && matches!(input, Input::Recheck) {
            return Ok(());
        }
        let mut contact =
            stored.unwrap_or_else(|| Contact::new(tenant, contact_id, self.config.dedupe_capacity));
        let original = contact.clone();
        let before = snapshot::visible(&contact);
        let (outputs, changed, recheck) = {
            let control = self.control.read(ctx);
            let mut out = Outbox::new(&self.config.topics, tenant, contact_id, cause, at);
            let mut step = Step {
                contact: &mut contact,
                control: control.as_ref(),
                config: &self.config,
                out: &mut out,
                metrics: &self.metrics,
                recheck_pauses: false,
            };
            let changed = match input {
                Input::Call(event) => calls::handle(&mut step, event)?,
                Input::Launch(launch) => outcomes::handle(&mut step, launch)?,
                Input::Command(cmd) => commands::handle(&mut step, cmd)?,
                Input::Recheck => {
                    launch::recheck_pauses(&mut step, at)?;
                    true
                }
            };
            let recheck = step.recheck_pauses;
            if changed {
                contact.prune_jobs(self.config.max_finished_jobs);
                if snapshot::visible(&contact) != before {
                    contact.version = contact.version.saturating_add(1);
                    // The state event belongs to the input, whatever a timer
                    // borrowed as the cause of the jobs it re-planned.
                    out.cause = cause;
                    let env = out.envelope(&["contact-state"]);
                    out.state(&snapshot::snapshot(&contact, &env))?;
                }
            }
            (out.into_outputs(), changed, recheck)
        };
        // Whatever the handler says, a contact that differs is stored: a change that is
        // not a transition (the lead's stop on a contact the CRM already barred, kept only
        // as its sticky source) must outlive this input, or the CRM's next `false` lifts it.
        if contact != original {
            ctx.put_json(CONTACTS_STORE, key.clone(), &contact)
                .map_err(|e| ProcessError::Invalid(format!("encoding the contact: {e}")))?;
            if changed {
                for output in outputs {
                    ctx.emit(output);
                }
            }
        }
        // Also when nothing changed: a re-check that found the pause still
        // on must look again later.
        self.arm_recheck(ctx, &key, &contact, recheck);
        Ok(())
    }

    /// Keeps the re-check timer set while a job waits for a pause to lift.
    fn arm_recheck(&self, ctx: &mut Context<'_>, key: &[u8], contact: &Contact, asked: bool) {
        let handle = Self::recheck_handle(key);
        let held = contact
            .jobs
            .iter()
            .any(|j| j.state == callstream_schemas::JobState::Held);
        if held && (asked || ctx.timer_due(&handle).is_none()) {
            let every = TimeDelta::from_std(self.config.pause_recheck)
                .unwrap_or(TimeDelta::minutes(1))
                .num_milliseconds();
            let due = ctx.wall_clock_ms().saturating_add(every);
            ctx.set_timer(
                TimeDomain::WallClock,
                PAUSE_RECHECK_TIMER,
                key.to_vec(),
                due,
                [],
            );
        } else if !held && ctx.timer_due(&handle).is_some() {
            ctx.cancel_timer(&handle);
        }
    }
}

fn check_key(record: &Record, contact_id: &str) -> Result<(), ProcessError> {
    match record.key.as_deref() {
        Some(key) if key == contact_id.as_bytes() => Ok(()),
        _ => Err(ProcessError::Invalid(
            "the record key is not the event's contact_id (inputs must be keyed by contact)".into(),
        )),
    }
}

impl<C: ControlSource> Processor for ContactProcessor<C> {
    fn stores(&self) -> &'static [&'static str] {
        STORES
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let value = record
            .value
            .as_deref()
            .ok_or_else(|| ProcessError::Decode("the record has no value".into()))?;
        let at = millis(ctx.timestamp_ms());
        if record.topic == self.config.topics.call_events {
            let event =
                CallEvent::decode(value).map_err(|e| ProcessError::Decode(e.to_string()))?;
            check_key(record, &event.contact_id)?;
            let cause = cause_of(event.event_id, event.correlation_id);
            let (tenant, contact) = (event.tenant_id.clone(), event.contact_id.clone());
            self.run(ctx, &tenant, &contact, cause, at, Input::Call(&event))
        } else if record.topic == self.config.topics.contact_commands {
            let cmd =
                ContactCommand::decode(value).map_err(|e| ProcessError::Decode(e.to_string()))?;
            check_key(record, &cmd.contact_id)?;
            let cause = cause_of(cmd.event_id, cmd.correlation_id);
            let (tenant, contact) = (cmd.tenant_id.clone(), cmd.contact_id.clone());
            self.run(ctx, &tenant, &contact, cause, at, Input::Command(&cmd))
        } else if record.topic == self.config.topics.call_launches {
            let launch =
                CallLaunch::decode(value).map_err(|e| ProcessError::Decode(e.to_string()))?;
            check_key(record, &launch.contact_id)?;
            let cause = cause_of(launch.event_id, launch.correlation_id);
            let (tenant, contact) = (launch.tenant_id.clone(), launch.contact_id.clone());
            self.run(ctx, &tenant, &contact, cause, at, Input::Launch(&launch))
        } else {
            Err(ProcessError::Invalid(format!(
                "not an input of the contact processor: {}",
                record.topic
            )))
        }
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        if timer.handle.name != PAUSE_RECHECK_TIMER {
            return Ok(());
        }
        let key = timer.handle.key.clone();
        let Ok(Some(contact)) = ctx.get_json::<Contact>(CONTACTS_STORE, &key) else {
            return Ok(());
        };
        // A re-check's own cause: the timer firing for this contact at this
        // time (each re-planned job uses the event that held it instead).
        let cause_id = callstream_domain::ids::contact::derived(
            Uuid::nil(),
            &[
                "pause-recheck",
                &contact.tenant_id,
                &contact.contact_id,
                &timer.due_ms.to_string(),
            ],
        );
        let cause = cause_of(cause_id, None);
        let at = millis(timer.due_ms);
        self.run(
            ctx,
            &contact.tenant_id,
            &contact.contact_id,
            cause,
            at,
            Input::Recheck,
        )
    }
}

fn cause_of(event_id: Uuid, correlation_id: Option<Uuid>) -> Cause {
    Cause {
        event_id,
        correlation_id: correlation_id.unwrap_or(event_id),
    }
}
