//! One contact's turn: load its join state, let time pass, apply the input,
//! let time pass again (a completion arriving after the deadline is late
//! even if the timer has not fired yet), write the records the join decided,
//! store the state and move the contact's timer to its next due item.

use callstream_runtime::{Context, ProcessError, TimeDomain, TimerHandle};
use callstream_schemas::{CallEventSource, ExceptionStatus};

use crate::emit;
use crate::join::JoinEvent;
use crate::processor::{Detector, CONTACTS_STORE, CONTACT_TIMER};
use crate::state::ContactWindows;

/// The one-clock timers of a name: what versions before `TimeDomain::Either`
/// set for every deadline, and what `Detector::defer` sets while a backlog
/// is consumed.
const ONE_CLOCK: [TimeDomain; 2] = [TimeDomain::EventTime, TimeDomain::WallClock];

fn cancel(ctx: &mut Context<'_>, domain: TimeDomain, name: &str, key: &[u8]) {
    ctx.cancel_timer(&TimerHandle {
        domain,
        name: name.to_string(),
        key: key.to_vec(),
    });
}

/// Sets timer `name` for `key` at `due` on either clock (stream time or the
/// wall clock, whichever passes it first: one timer, one changelog record),
/// or cancels it; a timer already due then is left alone (no changelog
/// write). A pair of one-clock timers left under the name (state restored
/// from an older version, or a deferral) is cancelled on the way.
pub(crate) fn arm(ctx: &mut Context<'_>, name: &str, key: &[u8], due: Option<i64>) {
    let current = ctx.timer_due_at(TimeDomain::Either, name, key);
    match due {
        Some(due) if current != Some(due) => {
            ctx.set_timer(TimeDomain::Either, name, key.to_vec(), due, []);
        }
        None if current.is_some() => cancel(ctx, TimeDomain::Either, name, key),
        _ => {}
    }
    for domain in ONE_CLOCK {
        if ctx.timer_due_at(domain, name, key).is_some() {
            cancel(ctx, domain, name, key);
        }
    }
}

impl Detector {
    /// One contact's turn. The state is written only when its encoding
    /// changed (compared as bytes: cheaper than keeping a copy of the
    /// decoded state to compare with).
    pub(crate) fn with_contact(
        &mut self,
        ctx: &mut Context<'_>,
        key: &[u8],
        apply: impl FnOnce(&mut ContactWindows, i64) -> Vec<JoinEvent>,
    ) -> Result<(), ProcessError> {
        let stored = ctx.get(CONTACTS_STORE, key);
        let existed = stored.is_some();
        let mut state = match stored {
            Some(bytes) => ContactWindows::decode(bytes)
                .map_err(|e| ProcessError::Invalid(format!("corrupt contact state: {e}")))?,
            None => ContactWindows::default(),
        };
        let clocks = self.clocks(ctx);
        let mut events = state.advance(clocks, &self.join);
        events.extend(apply(&mut state, clocks.now_ms));
        events.extend(state.advance(clocks, &self.join));

        if !events.is_empty() {
            let contact_id = callstream_kit::keys::contact_of(key);
            for event in &events {
                self.emit_join_event(ctx, &contact_id, event, clocks.now_ms);
            }
        }
        if state.is_empty() {
            if existed {
                ctx.delete(CONTACTS_STORE, key.to_vec());
            }
        } else {
            let encoded = state.encode();
            if ctx.get(CONTACTS_STORE, key) != Some(encoded.as_slice()) {
                ctx.put(CONTACTS_STORE, key.to_vec(), encoded);
            }
        }
        arm(ctx, CONTACT_TIMER, key, state.next_due(&self.join));
        Ok(())
    }

    fn emit_join_event(
        &mut self,
        ctx: &mut Context<'_>,
        contact_id: &str,
        event: &JoinEvent,
        now_ms: i64,
    ) {
        match event {
            JoinEvent::Missing { launch } => {
                tracing::info!(launch_id = %launch.launch_id, tenant = %launch.tenant_id,
                    trigger = ?launch.missing, "completion missing");
                let missing = emit::missing(launch, contact_id, now_ms);
                let exception = emit::missing_exception(
                    launch,
                    contact_id,
                    ExceptionStatus::Open,
                    now_ms,
                    format!(
                        "no completion within {} ms plus {} ms grace of acceptance",
                        launch.window_ms, launch.grace_ms
                    ),
                );
                ctx.emit_all([
                    callstream_kit::emit::output_or_log(&self.names.missing, contact_id, &missing),
                    callstream_kit::emit::output_or_log(
                        &self.names.exceptions,
                        contact_id,
                        &exception,
                    ),
                ]);
            }
            JoinEvent::Late { launch, completion } => {
                tracing::info!(launch_id = %launch.launch_id, event_id = %completion.event_id,
                    "late completion resolves a missing case");
                let resolved = emit::late(launch, completion, contact_id, now_ms);
                let exception = emit::missing_exception(
                    launch,
                    contact_id,
                    ExceptionStatus::Resolved,
                    now_ms,
                    "the completion arrived late".to_string(),
                );
                ctx.emit_all([
                    callstream_kit::emit::output_or_log(
                        &self.names.resolved,
                        contact_id,
                        &resolved,
                    ),
                    callstream_kit::emit::output_or_log(
                        &self.names.exceptions,
                        contact_id,
                        &exception,
                    ),
                ]);
            }
            JoinEvent::Accepted { launch } => self.count_launch(ctx, launch, now_ms),
            JoinEvent::OnTime { launch, completion } => {
                if completion.source == CallEventSource::Live {
                    self.count_delivered(ctx, launch);
                }
            }
            JoinEvent::Recovered { launch, .. } => {
                tracing::debug!(launch_id = %launch.launch_id, "recovered completion closes the case");
            }
            JoinEvent::DuplicateLaunch { launch } => {
                tracing::debug!(launch_id = %launch.launch_id, "launch seen before");
            }
            JoinEvent::Duplicate { completion } => {
                tracing::debug!(event_id = %completion.event_id, "duplicate completion matches nothing");
            }
            JoinEvent::Unmatched { completion } => {
                tracing::info!(event_id = %completion.event_id, "completion matched no launch");
            }
            JoinEvent::Expired { launch } => {
                tracing::debug!(launch_id = %launch.launch_id, "missing case forgotten after the late retention");
            }
        }
    }
}

/// Emitting optional records (an event that does not encode is skipped).
trait EmitAll {
    fn emit_all<const N: usize>(&mut self, outputs: [Option<callstream_runtime::Output>; N]);
}

impl EmitAll for Context<'_> {
    fn emit_all<const N: usize>(&mut self, outputs: [Option<callstream_runtime::Output>; N]) {
        for output in outputs.into_iter().flatten() {
            self.emit(output);
        }
    }
}
