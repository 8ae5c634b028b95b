//! An operator's retry of a CRM command that failed for good.
//!
//! The operator API answers `POST /v1/exceptions/{id}/retry` by publishing
//! a `ContactCommand` (kind `retry_now`, `exception_id` set, actor the
//! operator) on `crm-commands`, keyed by the exception's contact, so it
//! reaches the partition that holds the failed command. The command names
//! the exception, not the payload: the dispatcher's own ledger kept the
//! failed command (see `settle`), and `retryable` maps the open exception
//! to it.
//!
//! A retry that finds its command closes the exception (resolved, by the
//! operator), audits `applied`, and puts the kept command back at the end
//! of its contact's queue, where it runs like any command: the ledger's
//! `maybe_applied` makes a create that may have landed search by
//! `callstream_op_id` first, so a retry never duplicates. Anything else
//! (no such open exception here, another tenant's, retried already, not a
//! retry) is audited `rejected` with a reason and changes nothing.
//!
//! Guarantee: one open exception is retried at most once; the command it
//! names runs again exactly once per accepted retry.

use callstream_runtime::ProcessError;
use callstream_schemas::{Actor, AuditResult, ContactCommand, ContactCommandKind, CrmCommand};
use uuid::Uuid;

use crate::control::Switches;
use crate::emit::{self, Closing};
use crate::machine::{invalid, Step};
use crate::state::{LedgerEntry, Retryable, Settled, LEDGER, RETRYABLE};

/// Why a retry was refused: the audit event's reason code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not a retry: another kind, or no exception named.
    NotARetry,
    /// No open `crm_failed` exception of this tenant and contact with a
    /// kept command: unknown, retried already, or closed.
    NoFailedCommand,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::NotARetry => "not_a_crm_retry",
            Refusal::NoFailedCommand => "no_failed_crm_command",
        }
    }
}

impl<S: Switches> Step<'_, '_, '_, S> {
    /// An operator's retry command for this contact arrived.
    pub fn operator_retry(
        &mut self,
        request: &ContactCommand,
        traceparent: Option<String>,
    ) -> Result<(), ProcessError> {
        let (exception_id, mut entry) = match self.retry_target(request)? {
            Ok(found) => found,
            Err(refusal) => return self.refuse(request, refusal, traceparent.as_deref()),
        };
        let Some(kept) = entry.kept.take() else {
            return self.refuse(request, Refusal::NoFailedCommand, traceparent.as_deref());
        };
        let op = kept.command.operation_id;
        entry.open_exception = None;
        entry.at_ms = self.now;
        self.ctx
            .put_json(LEDGER, op.to_string().into_bytes(), &entry)
            .map_err(|e| invalid("ledger entry", e))?;
        self.ctx
            .delete(RETRYABLE, exception_id.to_string().into_bytes());
        let closing = Closing {
            exception_id,
            actor: request.actor.clone(),
            reason: "retried".into(),
            detail: Some(format!(
                "retried by {}; the command runs again",
                request.actor.id
            )),
            causation_id: request.event_id,
        };
        let trace = traceparent.clone().or(kept.traceparent);
        self.emit_closing(&kept.command, &closing, trace.as_deref())?;
        self.audit(request, AuditResult::Applied, "retried", trace.as_deref())?;
        tracing::info!(op_id = %op, contact = %self.contact, %exception_id,
            command_id = %request.event_id, "operator retry of a failed CRM command");
        self.arrive(kept.command, trace)
    }

    /// The exception the retry names and the failed operation's ledger
    /// entry, or why there is nothing to retry.
    fn retry_target(
        &mut self,
        request: &ContactCommand,
    ) -> Result<Result<(Uuid, LedgerEntry), Refusal>, ProcessError> {
        let exception_id = match (request.kind, request.exception_id) {
            (ContactCommandKind::RetryNow, Some(id)) => id,
            _ => return Ok(Err(Refusal::NotARetry)),
        };
        let key = exception_id.to_string().into_bytes();
        let index: Option<Retryable> = self
            .ctx
            .get_json(RETRYABLE, &key)
            .map_err(|e| invalid("retryable entry", e))?;
        let Some(index) = index.filter(|i| i.contact_id == self.contact) else {
            return Ok(Err(Refusal::NoFailedCommand));
        };
        let entry = self.ledger(&index.operation_id)?;
        let usable = entry.filter(|e| {
            e.settled == Settled::Failed
                && e.open_exception == Some(exception_id)
                && e.kept
                    .as_ref()
                    .is_some_and(|k| same_owner(&k.command, request))
        });
        match usable {
            Some(entry) => Ok(Ok((exception_id, entry))),
            None => Ok(Err(Refusal::NoFailedCommand)),
        }
    }

    fn refuse(
        &mut self,
        request: &ContactCommand,
        refusal: Refusal,
        traceparent: Option<&str>,
    ) -> Result<(), ProcessError> {
        tracing::info!(contact = %self.contact, command_id = %request.event_id,
            exception_id = ?request.exception_id, reason = refusal.code(),
            "operator retry refused");
        self.audit(request, AuditResult::Rejected, refusal.code(), traceparent)
    }

    fn audit(
        &mut self,
        request: &ContactCommand,
        result: AuditResult,
        reason: &str,
        traceparent: Option<&str>,
    ) -> Result<(), ProcessError> {
        self.env.config.metrics.operator_retry(result.as_str());
        let audit = emit::retry_audit(
            &self.env.topics,
            request,
            result,
            reason,
            self.now,
            traceparent,
        )
        .map_err(|e| invalid("audit event", e))?;
        self.ctx.emit(audit);
        Ok(())
    }

    /// Closes `command`'s earlier exception as its operation settles again
    /// without an operator's retry (it came again, or failed again and
    /// `opened` replaces it), so one failure has one open exception.
    pub(crate) fn close_earlier(
        &mut self,
        command: &CrmCommand,
        earlier: Uuid,
        opened: Option<Uuid>,
        traceparent: Option<&str>,
    ) -> Result<(), ProcessError> {
        self.ctx.delete(RETRYABLE, earlier.to_string().into_bytes());
        let (reason, detail) = match opened {
            Some(new) => ("superseded", format!("failed again; see exception {new}")),
            None => ("settled", "the command came again and settled".to_owned()),
        };
        let closing = Closing {
            exception_id: earlier,
            actor: Actor::system(self.env.config.service_name.clone()),
            reason: reason.into(),
            detail: Some(detail),
            causation_id: command.event_id,
        };
        self.emit_closing(command, &closing, traceparent)
    }

    fn emit_closing(
        &mut self,
        command: &CrmCommand,
        closing: &Closing,
        traceparent: Option<&str>,
    ) -> Result<(), ProcessError> {
        let event =
            emit::exception_resolved(&self.env.topics, command, closing, self.now, traceparent)
                .map_err(|e| invalid("exception", e))?;
        self.ctx.emit(event);
        Ok(())
    }
}

/// The retry's tenant and contact are the failed command's.
fn same_owner(command: &CrmCommand, request: &ContactCommand) -> bool {
    command.tenant_id == request.tenant_id && command.contact_id == request.contact_id
}
