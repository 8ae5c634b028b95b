//! Operator commands on `contact-commands`: recover now, advance as
//! no-answer or voicemail, and ignore of a case's own exception (the
//! detector's `completion_missing` or recovery's `recovery_failed`, named
//! with its launch). They act on the contact's case named by the command's
//! launch id, else by its exception id, else on the contact's only (or
//! oldest) case. Every one is audited with the operator as actor; one that
//! finds no open case is audited as rejected and changes nothing. Other
//! command kinds, and ignores of other exceptions, belong to the contact
//! processor and are skipped.

use callstream_domain::ids::completion_case as case_ids;
use callstream_kit::emit::timestamp;
use callstream_runtime::{Context, ProcessError};
use callstream_schemas::{
    AuditEvent, AuditResult, CallOutcome, ContactCommand, ContactCommandKind, ExceptionStatus,
    Resolution,
};

use crate::case::ContactCases;
use crate::close::Closing;
use crate::emit;
use crate::ids;
use crate::processor::Recovery;

fn target(state: &ContactCases, cmd: &ContactCommand) -> Option<usize> {
    if let Some(launch) = cmd.launch_id {
        return state.find(&launch);
    }
    if let Some(exception) = cmd.exception_id {
        return state.cases.iter().position(|c| {
            case_ids::missing_exception(&c.launch_id) == exception
                || case_ids::recovery_failed_exception(&c.launch_id) == exception
        });
    }
    (!state.cases.is_empty()).then_some(0)
}

impl Recovery {
    pub(crate) fn on_command(
        &mut self,
        ctx: &mut Context<'_>,
        cmd: ContactCommand,
    ) -> Result<(), ProcessError> {
        let action = match cmd.kind {
            ContactCommandKind::Recover => "recovery.recover",
            ContactCommandKind::AdvanceNoAnswer => "recovery.advanced_no_answer",
            ContactCommandKind::AdvanceVoicemail => "recovery.advanced_voicemail",
            // Only ignores of a case's own exceptions are ours; the contact processor
            // judges every other one (the same test, from the command alone), so each
            // ignore is audited exactly once.
            ContactCommandKind::Ignore
                if case_ids::ignore_targets_case(cmd.launch_id, cmd.exception_id) =>
            {
                "recovery.ignored"
            }
            _ => return Ok(()),
        };
        // Tenant and contact: contact ids collide across tenants.
        let contact = callstream_kit::keys::contact_key(&cmd.tenant_id, &cmd.contact_id);
        let mut state = Self::load(ctx, &contact)?;
        if !state.remember_command(cmd.event_id) {
            return Ok(());
        }
        let Some(index) = target(&state, &cmd) else {
            self.reject(ctx, &cmd, action);
            return self.save(ctx, &contact, &mut state);
        };
        let now = ctx.wall_clock_ms();
        match cmd.kind {
            ContactCommandKind::Recover => {
                let mut case = state.cases[index].clone();
                case.actor = cmd.actor.clone();
                case.command_id = Some(cmd.event_id);
                case.polls = 0;
                case.failures = 0;
                self.start_fetch(ctx, &contact, &mut case);
                state.cases[index] = case;
            }
            ContactCommandKind::AdvanceNoAnswer | ContactCommandKind::AdvanceVoicemail => {
                let outcome = if cmd.kind == ContactCommandKind::AdvanceVoicemail {
                    CallOutcome::Voicemail
                } else {
                    CallOutcome::NoAnswer
                };
                let event = emit::advance(&state.cases[index], outcome, now);
                let closing = Closing {
                    actor: Some(&cmd.actor),
                    command_id: Some(cmd.event_id),
                    reason: Some(cmd.reason.as_deref().unwrap_or("operator")),
                    ..Closing::advanced(&event, "operator")
                };
                self.finish(ctx, &mut state, index, closing);
            }
            _ => {
                let closing = Closing {
                    resolution: Resolution::Ignored,
                    event: None,
                    exception_status: ExceptionStatus::Ignored,
                    action,
                    reason: cmd.reason.as_deref(),
                    actor: Some(&cmd.actor),
                    command_id: Some(cmd.event_id),
                };
                self.finish(ctx, &mut state, index, closing);
            }
        }
        self.save(ctx, &contact, &mut state)
    }

    /// Audits a command that found no open case.
    fn reject(&self, ctx: &mut Context<'_>, cmd: &ContactCommand, action: &str) {
        tracing::info!(command_id = %cmd.event_id, kind = %cmd.kind, "operator command finds no open case");
        let audit = AuditEvent {
            event_id: ids::rejected_command_audit(&cmd.event_id),
            tenant_id: cmd.tenant_id.clone(),
            occurred_at: timestamp(ctx.wall_clock_ms()),
            causation_id: Some(cmd.event_id),
            correlation_id: cmd.correlation_id,
            actor: cmd.actor.clone(),
            action: action.to_string(),
            subject_type: "contact".into(),
            subject_id: cmd.contact_id.clone(),
            contact_id: Some(cmd.contact_id.clone()),
            command_id: Some(cmd.event_id),
            result: AuditResult::Rejected,
            reason: Some("no_open_case".into()),
            detail: Some("no missing-completion case is open for this contact and launch".into()),
        };
        self.emit(ctx, &self.names.audit, &cmd.tenant_id, &audit);
    }
}
