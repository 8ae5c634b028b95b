//! How a case ends: a lookup result carried out (recovered, advanced,
//! waiting, given up), and the records that close a case (the call event,
//! `completion-resolved`, both exceptions, the audit event).

use callstream_runtime::Context;
use callstream_schemas::{Actor, AuditResult, CallEvent, CallOutcome, ExceptionStatus, Resolution};
use uuid::Uuid;

use crate::case::{ContactCases, Next, Phase};
use crate::emit::{self, AuditFacts, Which};
use crate::processor::Recovery;

impl Recovery {
    /// Closes case `index` with its resolution: resolved event, both
    /// exceptions closed (`status`), and the audit event of `action`.
    pub(crate) fn finish(
        &self,
        ctx: &mut Context<'_>,
        state: &mut ContactCases,
        index: usize,
        closing: Closing<'_>,
    ) {
        let now = ctx.wall_clock_ms();
        let case = state.close(index, now);
        let contact = case.contact_id.clone();
        self.arm(ctx, contact.as_bytes(), &case, None);
        let actor = closing.actor.unwrap_or(&case.actor).clone();
        let command_id = closing.command_id.or(case.command_id);
        if let Some(event) = closing.event {
            self.emit(ctx, &self.names.events, &contact, event);
        }
        let resolved = emit::resolved(&case, closing.resolution, closing.event, &actor, now);
        self.emit(ctx, &self.names.resolved, &contact, &resolved);
        let mut which = vec![Which::Missing];
        if case.failed_exception {
            which.push(Which::RecoveryFailed);
        }
        for w in which {
            let detail = format!("closed: {}", closing.resolution);
            let e = emit::exception(&case, w, closing.exception_status, &actor, detail, now);
            self.emit(ctx, &self.names.exceptions, &contact, &e);
        }
        let audit = emit::audit(
            &case,
            AuditFacts {
                action: closing.action,
                actor: &actor,
                command_id,
                result: AuditResult::Applied,
                reason: closing.reason,
                detail: None,
                now_ms: now,
            },
        );
        self.emit(ctx, &self.names.audit, &case.tenant_id, &audit);
        tracing::info!(launch_id = %case.launch_id, tenant = %case.tenant_id,
            action = closing.action, actor = %actor.id, "missing completion case closed");
    }

    /// Carries out what a lookup result means for case `index`.
    pub(crate) fn apply_next(
        &self,
        ctx: &mut Context<'_>,
        contact: &[u8],
        state: &mut ContactCases,
        index: usize,
        next: Next,
    ) {
        let now = ctx.wall_clock_ms();
        match next {
            Next::Recovered { record, outcome } => {
                let event = emit::recovered(&state.cases[index], &record, outcome, now);
                self.finish(ctx, state, index, Closing::recovered(&event));
            }
            Next::AdvanceNoAnswer => {
                let event = emit::advance(&state.cases[index], CallOutcome::NoAnswer, now);
                self.finish(ctx, state, index, Closing::advanced(&event, "not_found"));
            }
            Next::Poll { at_ms } | Next::Retry { at_ms } => {
                let case = &mut state.cases[index];
                case.phase = Phase::Waiting { at_ms };
                let case = case.clone();
                self.arm(ctx, contact, &case, Some(at_ms));
            }
            Next::Fail { reason } => {
                let case = &mut state.cases[index];
                case.phase = Phase::Failed;
                case.failed_exception = true;
                let case = case.clone();
                self.arm(ctx, contact, &case, None);
                tracing::warn!(launch_id = %case.launch_id, %reason, "recovery gave up; exception opened");
                let actor = case.actor.clone();
                let e = emit::exception(
                    &case,
                    Which::RecoveryFailed,
                    ExceptionStatus::Open,
                    &actor,
                    reason.clone(),
                    now,
                );
                self.emit(ctx, &self.names.exceptions, &case.contact_id, &e);
                let audit = emit::audit(
                    &case,
                    AuditFacts {
                        action: "recovery.failed",
                        actor: &actor,
                        command_id: case.command_id,
                        result: AuditResult::Rejected,
                        reason: Some("recovery_failed"),
                        detail: Some(&reason),
                        now_ms: now,
                    },
                );
                self.emit(ctx, &self.names.audit, &case.tenant_id, &audit);
            }
        }
    }
}

/// How a case closes.
pub(crate) struct Closing<'a> {
    pub resolution: Resolution,
    pub event: Option<&'a CallEvent>,
    pub exception_status: ExceptionStatus,
    pub action: &'a str,
    pub reason: Option<&'a str>,
    /// The operator, when a command closes it (else the case's actor).
    pub actor: Option<&'a Actor>,
    pub command_id: Option<Uuid>,
}

impl<'a> Closing<'a> {
    pub fn recovered(event: &'a CallEvent) -> Self {
        Self {
            resolution: Resolution::Recovered,
            event: Some(event),
            exception_status: ExceptionStatus::Resolved,
            action: "recovery.recovered",
            reason: None,
            actor: None,
            command_id: None,
        }
    }

    pub fn advanced(event: &'a CallEvent, reason: &'a str) -> Self {
        let voicemail = event.outcome == callstream_schemas::CallOutcome::Voicemail;
        Self {
            resolution: if voicemail {
                Resolution::AdvancedVoicemail
            } else {
                Resolution::AdvancedNoAnswer
            },
            event: Some(event),
            exception_status: ExceptionStatus::Resolved,
            action: if voicemail {
                "recovery.advanced_voicemail"
            } else {
                "recovery.advanced_no_answer"
            },
            reason: Some(reason),
            actor: None,
            command_id: None,
        }
    }
}
