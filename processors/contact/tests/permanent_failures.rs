//! Every permanent failure the contact processor detects opens an exception
//! (`callstream_domain::failures`): each kind the registry gives the contact
//! processor is driven here, and a kind without a scenario fails the test.

mod support;

use callstream_domain::failures::{Owner, PermanentFailure};
use callstream_e2e::failures::{assert_opened, no_scenario};
use callstream_runtime::Processor;
use callstream_schemas::*;
use support::*;

#[test]
fn every_permanent_failure_of_the_contact_processor_opens_an_exception() {
    for failure in PermanentFailure::of(Owner::Contact) {
        let mut h = harness();
        let step_failed = drive(&mut h, failure);
        let e = assert_opened(failure, &h.exceptions());
        assert_eq!(e.contact_id, "c1", "{failure}");
        if step_failed {
            assert_eq!(
                h.state("c1").workflow_state,
                WorkflowState::Failed,
                "{failure}"
            );
        }
    }
}

/// Drives contact `c1` into `failure`; `true` when the failure ends its step failed.
fn drive<P: Processor>(h: &mut Harness<P>, failure: PermanentFailure) -> bool {
    match failure {
        PermanentFailure::LeadBarred => {
            h.enter("c1", CAMPAIGN);
            let mut update = command(ContactCommandKind::ContactUpdate, "c1", "stop");
            update.actor = Actor {
                kind: ActorKind::Integration,
                id: "launch-intake".into(),
            };
            update.contact = Some(ContactDetails {
                do_not_call: Some(true),
                ..ContactDetails::default()
            });
            h.command(&update, t0() + minutes(2));
            true
        }
        PermanentFailure::NoPhoneNumber => {
            let mut request = launch_request("c1", CAMPAIGN, "r1");
            request.contact = None;
            h.command(&request, t0());
            let plan = h.plans().pop().expect("planned");
            assert!(h.due("c1", &plan, t0() + minutes(5)).is_none());
            true
        }
        PermanentFailure::NoWindowOpening => {
            // A window wholly inside the federal quiet hours never opens.
            h.campaign_settings(
                CAMPAIGN,
                CampaignSettings {
                    windows: vec![CallingWindow {
                        days_of_week: (1..=7).collect(),
                        start_minute: 5 * 60,
                        end_minute: 6 * 60,
                    }],
                    retry_delays_minutes: vec![60],
                    max_attempts: 3,
                    next_campaign_id: None,
                    move_buffer_minutes: 10,
                },
            );
            let plan = h.enter("c1", CAMPAIGN);
            assert!(h.due("c1", &plan, t0() + minutes(5)).is_none());
            true
        }
        PermanentFailure::ResultRejected => {
            let launch = h.launched("c1");
            h.call(&answered(
                "c1",
                "CA1",
                Some(launch.launch_id),
                CallAnalysis::default(),
                t0() + minutes(7),
            ));
            // The platform reports the same call again with another result.
            h.call(&call_event(
                "c1",
                "CA1",
                Some(launch.launch_id),
                "busy",
                None,
                t0() + minutes(8),
            ));
            false
        }
        PermanentFailure::ProviderFailuresExhausted => {
            let mut launch = h.launched("c1");
            let mut now = t0() + minutes(5);
            for failure in 1..=4u32 {
                h.call(&call_event(
                    "c1",
                    &format!("CA{failure}"),
                    Some(launch.launch_id),
                    "failed",
                    None,
                    now,
                ));
                if failure < 4 {
                    let retry = h.plans().pop().expect("a retry");
                    now = retry.earliest_at.expect("earliest");
                    launch = h.due("c1", &retry, now).expect("launched");
                }
            }
            false
        }
        other => no_scenario("the contact processor", other),
    }
}
