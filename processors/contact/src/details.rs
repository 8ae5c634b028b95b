//! What callers say of a contact: its number, zone and restrictions, from a
//! launch request or a contact update (the CRM's intake, or an operator),
//! and an operator's lift of a restriction.
//!
//! Guarantees (the rule is `callstream_domain::restrictions`): a lead's own
//! opt-out is final; the CRM's flags add restrictions and lift only their
//! own; only `lift_restriction` from an operator, with a reason, lifts what
//! the lead or an operator set, and it is audited. A restriction that comes
//! into force cancels every future job of the contact at once, each with
//! the restriction as its reason.

use callstream_domain::restrictions::{Change, Restriction};
use callstream_runtime::ProcessError;
use callstream_schemas::{ActorKind, AuditResult, ContactCommand, ContactDetails};

use crate::commands::audit;
use crate::jobs::Step;

/// The restrictions a contact's details can carry, with their fields.
fn restriction_fields(details: &ContactDetails) -> [(Restriction, Option<bool>); 4] {
    [
        (Restriction::Blocked, details.blocked),
        (Restriction::DoNotCall, details.do_not_call),
        (Restriction::Enrolled, details.enrolled_student),
        (Restriction::Spam, details.spam),
    ]
}

/// Takes what the caller says of the contact: number, zone and restrictions.
/// An integration's (the CRM's) flags set and clear only its own; an
/// operator's `true` is sticky; nobody's `false` lifts what the lead or an
/// operator set (that is `lift_restriction`). A restriction that comes into
/// force cancels every future job at once, with its reason.
pub(crate) fn apply(
    step: &mut Step<'_, '_>,
    cmd: &ContactCommand,
    details: &ContactDetails,
) -> Result<(), ProcessError> {
    let c = &mut *step.contact;
    if let Some(phone) = details.phone_number.clone().filter(|p| !p.is_empty()) {
        c.phone = Some(phone);
    }
    if let Some(zone) = details.time_zone.clone().filter(|z| !z.is_empty()) {
        c.contact_zone = Some(zone);
    }
    if let Some(state) = details.state.clone().filter(|s| !s.is_empty()) {
        c.contact_state = Some(state);
    }
    let mut added = Vec::new();
    for (restriction, value) in restriction_fields(details) {
        let Some(value) = value else { continue };
        let change = match cmd.actor.kind {
            ActorKind::Operator if value => c.flags.set_by_operator(restriction),
            ActorKind::Operator => Change::Unchanged,
            // Anyone else speaks for the CRM record: it adds, and lifts only its own.
            _ => c.flags.from_crm(restriction, value),
        };
        if change == Change::Added {
            added.push(restriction);
        }
    }
    if let Some(first) = added.first() {
        let names: Vec<&str> = added.iter().map(|r| r.reason()).collect();
        let detail = format!(
            "{} set by {} {}",
            names.join(", "),
            cmd.actor.kind.as_str(),
            cmd.actor.id
        );
        step.cancel_all(first.reason(), Some(detail))?;
        crate::launch::end_step_if_idle(step, first.reason())?;
        step.stop_launches_in_flight(first.reason())?;
    }
    Ok(())
}

/// What the CRM or an operator knows of the contact changed: its details
/// are taken (see [`apply`]), and the change is audited.
pub(crate) fn contact_update(
    step: &mut Step<'_, '_>,
    cmd: &ContactCommand,
) -> Result<(), ProcessError> {
    let Some(details) = &cmd.contact else {
        return audit(step, cmd, AuditResult::Rejected, "no_details", None);
    };
    let before = step.contact.barred_reason();
    let cancelled_before = step.contact.active_jobs().len();
    apply(step, cmd, details)?;
    step.zone();
    let cancelled = cancelled_before - step.contact.active_jobs().len();
    let detail = match (before, step.contact.barred_reason()) {
        (_, Some(barred)) if cancelled > 0 => {
            format!("{barred}: {cancelled} future job(s) cancelled")
        }
        (_, Some(barred)) => format!("{barred}: no future job to cancel"),
        (_, None) => "details updated".to_owned(),
    };
    audit(
        step,
        cmd,
        AuditResult::Applied,
        "contact_updated",
        Some(detail),
    )
}

/// An operator lifts the restrictions whose flags are `false` in the
/// command's details, whoever set them (the lead's opt-out included). Only
/// this lifts a sticky restriction; a reason is required, and the lift is
/// audited with it. The CRM's own flags stay the CRM's to clear.
pub(crate) fn lift_restriction(
    step: &mut Step<'_, '_>,
    cmd: &ContactCommand,
) -> Result<(), ProcessError> {
    if cmd.actor.kind != ActorKind::Operator {
        return audit(step, cmd, AuditResult::Rejected, "operator_only", None);
    }
    if cmd.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
        return audit(step, cmd, AuditResult::Rejected, "reason_required", None);
    }
    let to_lift: Vec<Restriction> = cmd
        .contact
        .as_ref()
        .map(|d| {
            restriction_fields(d)
                .into_iter()
                .filter(|(_, v)| *v == Some(false))
                .map(|(r, _)| r)
                .collect()
        })
        .unwrap_or_default();
    if to_lift.is_empty() {
        return audit(step, cmd, AuditResult::Rejected, "nothing_to_lift", None);
    }
    let mut lifted = Vec::new();
    for restriction in to_lift {
        let sticky = step.contact.flags.sticky(restriction);
        step.contact.flags.lift_by_operator(restriction);
        if let Some(source) = sticky {
            lifted.push(format!("{} (set by {source:?})", restriction.reason()));
        }
    }
    let detail = match (lifted.is_empty(), step.contact.barred_reason()) {
        (true, _) => "no sticky restriction to lift".to_owned(),
        (false, None) => format!("lifted {}", lifted.join(", ")),
        (false, Some(still)) => format!("lifted {}; still barred: {still}", lifted.join(", ")),
    };
    audit(
        step,
        cmd,
        AuditResult::Applied,
        "restriction_lifted",
        Some(detail),
    )
}
