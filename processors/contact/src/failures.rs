//! The contact's permanent failures: the one place a step ends failed, and the
//! exceptions the contact processor opens for the failures it detects
//! (see `callstream_domain::failures`).
//!
//! Guarantees: every path that makes a step `failed` goes through [`fail_step`] (a test
//! reads the sources to hold this), and opens one exception per failure, under an id
//! derived from the event that caused it, so a replay names it the same. A refused
//! launch's exception is the launch dispatcher's, which detected it; the step still
//! ends here.

use callstream_domain::failures::{Owner, PermanentFailure};
use callstream_domain::workflow::WorkflowState;
use callstream_runtime::ProcessError;
use callstream_schemas::{Actor, ExceptionStatus, ExceptionType};
use uuid::Uuid;

use crate::emit::ExceptionCase;
use crate::jobs::Step;

/// What the exception names besides the contact.
#[derive(Debug, Clone, Default)]
pub(crate) struct Subject {
    pub campaign_id: Option<String>,
    pub job_id: Option<Uuid>,
    pub launch_id: Option<Uuid>,
    pub call_id: Option<String>,
}

/// Ends the current step failed (if the workflow allows it from where it is) and opens
/// the failure's exception when it did. `reason` is the exception's reason code.
pub(crate) fn fail_step(
    step: &mut Step<'_, '_>,
    failure: PermanentFailure,
    reason: &str,
    detail: String,
    subject: Subject,
) -> Result<(), ProcessError> {
    let workflow = step.contact.workflow;
    if step
        .contact
        .workflow
        .apply(workflow.step(), WorkflowState::Failed)
        .is_err()
    {
        return Ok(());
    }
    open(step, failure, reason, detail, subject)
}

/// Opens the exception of a failure the contact processor detects; a failure another
/// service owns opened its exception there.
pub(crate) fn open(
    step: &mut Step<'_, '_>,
    failure: PermanentFailure,
    reason: &str,
    detail: String,
    subject: Subject,
) -> Result<(), ProcessError> {
    if failure.owner() != Owner::Contact {
        return Ok(());
    }
    let exception_id = callstream_domain::ids::contact::derived(
        step.out.cause.event_id,
        &["exception", failure.as_str()],
    );
    let campaign_id = subject
        .campaign_id
        .or_else(|| step.contact.campaign.clone());
    step.out.exception(ExceptionCase {
        exception_id,
        status: ExceptionStatus::Open,
        exception_type: ExceptionType::from(failure),
        urgent: false,
        campaign_id,
        job_id: subject.job_id,
        launch_id: subject.launch_id,
        call_id: subject.call_id,
        reason: reason.to_owned(),
        detail: Some(detail),
        actor: Actor::system(step.config.service_name.clone()),
    })
}

#[cfg(test)]
mod tests {
    /// The lint behind the module's guarantee: no source file but this one names the
    /// failed state as a destination, so no path ends a step failed without its exception.
    #[test]
    fn only_fail_step_ends_a_step_failed() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut offenders = Vec::new();
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // The snapshot maps stored states, it does not move one.
            if !name.ends_with(".rs") || name == "failures.rs" || name == "snapshot.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.contains("WorkflowState::Failed") {
                offenders.push(name.to_owned());
            }
        }
        assert!(
            offenders.is_empty(),
            "these end a step failed without `failures::fail_step` (and so without an \
             exception): {offenders:?}"
        );
    }
}
