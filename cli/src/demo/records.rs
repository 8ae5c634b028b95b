//! The records callstream keeps, checked against what others saw, never against its own
//! counters alone:
//!
//! - `webhooks_on_call_events`: every webhook the gateway answered 2xx (status callbacks and
//!   analyses, as the voice simulator recorded the event id each answer named) is on
//!   `call-events`: "202 means stored";
//! - `failures_have_exceptions`: every launch that failed for good, every CRM command that
//!   failed for good and every contact whose workflow ended failed has an exception naming it
//!   (opened in the same transaction as the failure, so a crash between the two would show
//!   here).

use serde::Serialize;
use uuid::Uuid;

use super::by_launch::SimCall;
use super::promises::Check;
use super::tally::Tally;

/// The checks of the records kept.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Records {
    pub webhooks_on_call_events: Check,
    pub failures_have_exceptions: Check,
}

/// Checks both, from the simulator's calls and the topics' tally.
pub fn check(sim_calls: &[SimCall], tally: &Tally) -> Records {
    Records {
        webhooks_on_call_events: webhooks(sim_calls, tally),
        failures_have_exceptions: failures(tally),
    }
}

fn webhooks(sim_calls: &[SimCall], tally: &Tally) -> Check {
    let mut check = Check::default();
    for call in sim_calls {
        for id in &call.accepted_event_ids {
            check.saw();
            let stored = Uuid::parse_str(id).is_ok_and(|id| tally.call_event_ids.contains(&id));
            if !stored {
                check.broke(|| {
                    format!(
                        "call {}: event {id} answered 2xx, not on call-events",
                        call.sid
                    )
                });
            }
        }
    }
    check
}

fn failures(tally: &Tally) -> Check {
    let mut check = Check::default();
    let failed_launches = tally
        .launches
        .iter()
        .filter(|(_, l)| l.status == callstream_schemas::LaunchStatus::Failed);
    for (launch, _) in failed_launches {
        check.saw();
        if !tally.exception_launches.contains(launch) {
            check.broke(|| format!("launch {launch} failed with no exception"));
        }
    }
    let failed_crm = tally
        .crm_results
        .iter()
        .filter(|(_, (_, status, _))| status == "failed");
    for (operation, (action, _, _)) in failed_crm {
        check.saw();
        if !tally.exception_operations.contains(operation) {
            check.broke(|| format!("CRM {action} {operation} failed with no exception"));
        }
    }
    let failed_contacts = tally
        .workflows
        .iter()
        .filter(|(_, state)| **state == callstream_schemas::WorkflowState::Failed);
    for (contact, _) in failed_contacts {
        check.saw();
        if !tally.exception_contacts.contains(contact) {
            let (tenant, contact) = contact;
            check.broke(|| format!("contact {tenant}/{contact} failed with no exception"));
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_accepted_webhook_missing_from_call_events_breaks_it() {
        let (stored, lost) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let mut tally = Tally::default();
        tally.call_event_ids.insert(stored);
        let calls = json!({"calls": [
            {"sid": "CA1", "accepted_event_ids": [stored.to_string()]},
            {"sid": "CA2", "accepted_event_ids": [stored.to_string(), lost.to_string()]},
            {"sid": "CA3"},
        ]});
        let check = webhooks(&super::super::by_launch::sim_calls(&calls), &tally);
        assert_eq!((check.checked, check.broken), (3, 1));
        assert!(check.examples[0].contains("CA2"), "{:?}", check.examples);
    }

    #[test]
    fn a_failure_without_its_exception_breaks_it() {
        let mut tally = Tally::default();
        let (a, b, op) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        for launch in [a, b] {
            tally.launches.insert(
                launch,
                super::super::tally::Launch {
                    status: callstream_schemas::LaunchStatus::Failed,
                    accepted_at_ms: None,
                    reconciled: false,
                },
            );
        }
        tally.exception_launches.insert(a);
        tally
            .crm_results
            .insert(op, ("create_task".into(), "failed".into(), 5));
        let contact = ("acme".to_owned(), "c-1".to_owned());
        tally
            .workflows
            .insert(contact.clone(), callstream_schemas::WorkflowState::Failed);
        let check = failures(&tally);
        assert_eq!((check.checked, check.broken), (4, 3));
        tally.exception_launches.insert(b);
        tally.exception_operations.insert(op);
        tally.exception_contacts.insert(contact);
        assert!(failures(&tally).ok());
    }
}
