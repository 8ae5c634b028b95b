//! How a command settles: its `crm-result` (and exception, when it failed
//! for good), its ledger entry, the stale-check times of an applied
//! update, the suppressed or failed command kept for a replay or an
//! operator's retry, and the log line; then the contact is free for its
//! next command.
//!
//! Guarantees: one place writes all of it, so a settled command always has
//! a result, a ledger entry that agrees with it, and no timer left behind;
//! a failed operation has exactly one open exception, which names it in
//! `retryable`, and an earlier exception of the operation is closed when
//! the operation settles again.

use callstream_runtime::ProcessError;
use callstream_schemas::{CrmResultStatus, Event};
use uuid::Uuid;

use crate::control::Switches;
use crate::emit::{self, Report};
use crate::machine::{invalid, Step};
use crate::policy::FailReason;
use crate::request::{kind_of, object_type, write_request, WriteKind};
use crate::state::{LedgerEntry, Queued, Retryable, Settled, LEDGER, RETRYABLE, SUPPRESSED};

fn status_of(settled: Settled) -> CrmResultStatus {
    match settled {
        Settled::Applied => CrmResultStatus::Applied,
        Settled::AlreadyApplied => CrmResultStatus::AlreadyApplied,
        Settled::SkippedStale => CrmResultStatus::SkippedStale,
        Settled::Suppressed => CrmResultStatus::Suppressed,
        Settled::Shadow => CrmResultStatus::Shadow,
        Settled::Failed => CrmResultStatus::Failed,
    }
}

impl<S: Switches> Step<'_, '_, '_, S> {
    /// The ledger entry of `op`, including this step's own writes.
    pub(crate) fn ledger(&self, op: &Uuid) -> Result<Option<LedgerEntry>, ProcessError> {
        self.ctx
            .get_json(LEDGER, op.to_string().as_bytes())
            .map_err(|e| invalid("ledger entry", e))
    }

    fn object_type(&mut self) -> Result<Option<String>, ProcessError> {
        let action = self.active_mut()?.command.action;
        Ok(kind_of(action).ok().map(|k| object_type(k).to_owned()))
    }

    /// The write (or search) landed: `object_id` holds it.
    pub(crate) fn applied(
        &mut self,
        settled: Settled,
        object_id: String,
    ) -> Result<(), ProcessError> {
        let active = self.active_mut()?;
        if settled == Settled::Applied && kind_of(active.command.action) == Ok(WriteKind::Update) {
            let fact = active.command.fact_at.timestamp_millis();
            let names: Vec<String> = active.properties.keys().cloned().collect();
            for name in names {
                self.state.applied_at.insert(name, fact);
            }
        }
        let report = self.report(settled, Some(object_id), None)?;
        self.settle(settled, report)
    }

    /// An update all of whose properties have newer facts applied.
    pub(crate) fn stale(&mut self) -> Result<(), ProcessError> {
        let report = self.report(Settled::SkippedStale, None, None)?;
        self.settle(Settled::SkippedStale, report)
    }

    /// A command whose operation the ledger already settled for good.
    pub(crate) fn duplicate(&mut self, prior: LedgerEntry) -> Result<(), ProcessError> {
        let mut report = self.report(Settled::AlreadyApplied, prior.object_id, None)?;
        report.object_type = prior.object_type.or(report.object_type);
        self.settle(Settled::AlreadyApplied, report)
    }

    /// Writes are off: keep the command (replayable) and send nothing.
    pub(crate) fn suppress(&mut self) -> Result<(), ProcessError> {
        let command = &self.active_mut()?.command;
        let key = command.operation_id.to_string().into_bytes();
        let bytes = command
            .encode()
            .map_err(|e| invalid("suppressed command", e))?;
        self.ctx.put(SUPPRESSED, key, bytes);
        let report = self.report(Settled::Suppressed, None, None)?;
        self.settle(Settled::Suppressed, report)
    }

    /// Shadow mode: log what would have been sent, send nothing.
    pub(crate) fn shadow(&mut self) -> Result<(), ProcessError> {
        let contact = self.contact.clone();
        let active = self.active_mut()?;
        if let Ok(kind) = kind_of(active.command.action) {
            let request = write_request(&active.command, kind, active.properties.clone());
            let (method, path) = match request.method_and_path() {
                Ok((method, path)) => (method, path),
                // The real send would refuse it too (see `client`).
                Err(e) => ("none", e.to_string()),
            };
            let properties: Vec<&str> = match &request {
                crate::wire::CrmRequest::Create { properties, .. }
                | crate::wire::CrmRequest::Update { properties, .. } => {
                    properties.keys().map(String::as_str).collect()
                }
                crate::wire::CrmRequest::Search { .. } => Vec::new(),
            };
            // Names and ids only: property values may be personal data.
            tracing::info!(op_id = %active.command.operation_id, %contact,
                tenant = %active.command.tenant_id, method, path, ?properties,
                "shadow mode: CRM write not sent");
        }
        let report = self.report(Settled::Shadow, None, None)?;
        self.settle(Settled::Shadow, report)
    }

    /// Fails the active command for good and opens an exception.
    pub(crate) fn fail(&mut self, reason: FailReason) -> Result<(), ProcessError> {
        let now = self.now;
        let active = self.active_mut()?;
        let last_error = active
            .last_error
            .clone()
            .unwrap_or_else(|| "unknown error".into());
        let command = active.command.clone();
        let traceparent = active.traceparent.clone();
        let prior = self.ledger(&command.operation_id)?;
        let ordinal = prior.as_ref().map_or(0, |p| p.exceptions);
        let exception = emit::exception(
            &self.env.topics,
            &command,
            reason.code(),
            &last_error,
            ordinal,
            now,
            &self.env.config.service_name,
            traceparent.as_deref(),
        )
        .map_err(|e| invalid("exception", e))?;
        self.ctx.emit(exception);
        let report = self.report(Settled::Failed, None, Some(last_error))?;
        self.settle(Settled::Failed, report)
    }

    fn report(
        &mut self,
        settled: Settled,
        object_id: Option<String>,
        error: Option<String>,
    ) -> Result<Report, ProcessError> {
        let object_type = self.object_type()?;
        let active = self.active_mut()?;
        Ok(Report {
            status: status_of(settled),
            object_type,
            object_id,
            attempts: active.requests,
            http_status: active.last_status,
            error,
        })
    }

    /// Emits the result, records the ledger entry and frees the contact.
    fn settle(&mut self, settled: Settled, report: Report) -> Result<(), ProcessError> {
        let Some(active) = self.state.active.take() else {
            return Err(ProcessError::Invalid("no active command to settle".into()));
        };
        let command = &active.command;
        let op = command.operation_id.to_string();
        let prior = self.ledger(&command.operation_id)?;
        let results = prior.as_ref().map_or(0, |p| p.results);
        let output = emit::result(
            &self.env.topics,
            command,
            &report,
            results,
            self.now,
            active.traceparent.as_deref(),
        )
        .map_err(|e| invalid("crm-result", e))?;
        self.ctx.emit(output);
        if prior
            .as_ref()
            .is_some_and(|p| p.settled == Settled::Suppressed)
            && settled != Settled::Suppressed
        {
            self.ctx.delete(SUPPRESSED, op.clone().into_bytes());
        }
        let exceptions = prior.as_ref().map_or(0, |p| p.exceptions);
        let opened = (settled == Settled::Failed)
            .then(|| emit::exception_id(&command.operation_id, exceptions));
        if let Some(earlier) = prior.as_ref().and_then(|p| p.open_exception) {
            self.close_earlier(command, earlier, opened, active.traceparent.as_deref())?;
        }
        if let Some(exception_id) = opened {
            let index = Retryable {
                operation_id: command.operation_id,
                contact_id: command.contact_id.clone(),
            };
            self.ctx
                .put_json(RETRYABLE, exception_id.to_string().into_bytes(), &index)
                .map_err(|e| invalid("retryable entry", e))?;
        }
        let entry = LedgerEntry {
            settled,
            object_type: report.object_type.clone(),
            object_id: report.object_id.clone(),
            maybe_applied: settled == Settled::Failed && active.maybe_applied,
            maybe_applied_at: (settled == Settled::Failed && active.maybe_applied)
                .then_some(active.maybe_applied_at)
                .flatten(),
            results: results.saturating_add(1),
            exceptions: exceptions + u32::from(settled == Settled::Failed),
            at_ms: self.now,
            // Kept for an operator's retry: the ledger is the one place
            // that still has the command once its offset is committed.
            kept: opened.map(|_| Queued {
                command: command.clone(),
                traceparent: active.traceparent.clone(),
            }),
            open_exception: opened,
        };
        self.ctx
            .put_json(LEDGER, op.into_bytes(), &entry)
            .map_err(|e| invalid("ledger entry", e))?;
        self.cancel_timer(active.token);
        self.env
            .config
            .metrics
            .settled(&active.command.tenant_id, report.status.as_str());
        log_settled(&active, &self.contact, settled, &report);
        Ok(())
    }
}

/// The one log line per settled command (ids and codes, never bodies).
fn log_settled(active: &crate::state::Active, contact: &str, settled: Settled, report: &Report) {
    let op = active.command.operation_id;
    let action = active.command.action.as_str();
    match settled {
        Settled::Failed => tracing::warn!(op_id = %op, contact, action, attempts = report.attempts,
            http_status = report.http_status, error = report.error.as_deref().unwrap_or_default(),
            "CRM command failed for good; exception opened"),
        Settled::Suppressed => tracing::info!(op_id = %op, contact, action,
            "CRM writes are off; command suppressed (replayable)"),
        _ => tracing::debug!(op_id = %op, contact, action, status = ?settled,
            attempts = report.attempts, "CRM command settled"),
    }
}
