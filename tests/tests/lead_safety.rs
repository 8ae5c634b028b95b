//! The promises to the people called, kept on the real broker against the
//! voice simulator (issue 14): the pace cap holds on the wire after downtime,
//! a pause holds launches already queued for the dispatcher, and every
//! launch outcome returns to the workflow. What reached the platform is read
//! from the simulator's own records. Each test fails on the code before that
//! issue: the first with a burst of every overdue launch at once, the second
//! with calls placed while the pause was on.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use callstream_schemas::*;
use callstream_sim_voice::Behaviour;
use chrono::{TimeDelta, Utc};
use support::pipeline::{contact, read_until, Pipeline, Role};

/// Calls that ring a while and end, quickly, in simulated time.
fn quick_calls() -> Behaviour {
    Behaviour {
        time_scale: 0.001,
        ..Behaviour::default()
    }
}

/// The most creates in any window of `window` (creates sorted by time).
fn most_in_any_window(created: &[chrono::DateTime<Utc>], window: TimeDelta) -> usize {
    let mut most = 0;
    let mut start = 0;
    for (end, at) in created.iter().enumerate() {
        while *at - created[start] >= window {
            start += 1;
        }
        most = most.max(end + 1 - start);
    }
    most
}

/// Hole 5: 200 launches fall due while the scheduler and the contact
/// processor are stopped; when both restart, the overdue launches go out at
/// the grid's pace, never in a burst, and every one is placed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overdue_launches_after_downtime_keep_the_grid_pace_on_the_wire() -> Result<()> {
    const LAUNCHES: usize = 200;
    const SLOT_SECONDS: i32 = 2;
    const PER_SLOT: i32 = 10;
    let mut p = Pipeline::new("pace", quick_calls()).await?;
    p.settings(SLOT_SECONDS, PER_SLOT).await?;
    p.start(&[Role::Contact, Role::Scheduler, Role::Dispatcher])?;

    // Every launch planned a little ahead, then both planners stop.
    let not_before = Utc::now() + TimeDelta::seconds(15);
    for n in 0..LAUNCHES {
        p.produce(p.launch_request(n, Some(not_before))).await?;
    }
    let schedule = p.reader("schedule-events")?;
    let mut decisions: Vec<ScheduleEvent> = Vec::new();
    read_until(&schedule, &mut decisions, Duration::from_secs(120), |d| {
        d.iter()
            .filter(|e| e.kind == ScheduleEventKind::Allocated)
            .count()
            >= LAUNCHES
    })
    .await?;
    let last_slot = decisions
        .iter()
        .filter_map(|e| e.slot_at)
        .max()
        .expect("allocated slots");
    p.stop(&[Role::Contact, Role::Scheduler])?;
    assert!(p.creates().is_empty(), "nothing was due yet");

    // Every slot passes while they are down.
    let past = last_slot + TimeDelta::seconds(i64::from(SLOT_SECONDS) + 1);
    let wait = (past - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait).await;
    let restarted = Utc::now();
    p.start(&[Role::Contact, Role::Scheduler])?;

    // Every contact is called, once.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    while p.creates().len() < LAUNCHES && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let creates = p.creates();
    let mut per_contact: BTreeMap<String, usize> = BTreeMap::new();
    for call in &creates {
        let contact = call.target.as_ref().and_then(|t| t.contact_id.clone());
        *per_contact.entry(contact.unwrap_or_default()).or_default() += 1;
    }
    assert_eq!(per_contact.len(), LAUNCHES, "every contact placed");
    assert!(per_contact.values().all(|n| *n == 1), "one call each");
    assert!(creates.iter().all(|c| c.created_at >= restarted));

    // The pace on the wire: in any five slots, at most five slots' launches
    // plus one slot's for timing.
    let times: Vec<_> = creates.iter().map(|c| c.created_at).collect();
    let window = TimeDelta::seconds(5 * i64::from(SLOT_SECONDS));
    let most = most_in_any_window(&times, window);
    let cap = 6 * PER_SLOT as usize;
    println!("most creates in any {window}: {most} (cap {cap}), of {LAUNCHES}");
    assert!(most <= cap, "{most} creates in one window of five slots");

    // The overdue launches were held at the last hop and planned again.
    let launches = p.reader("call-launches")?;
    let mut outcomes: Vec<CallLaunch> = Vec::new();
    read_until(&launches, &mut outcomes, Duration::from_secs(30), |o| {
        o.iter()
            .filter(|l| l.status == LaunchStatus::Accepted)
            .count()
            >= LAUNCHES
    })
    .await?;
    let held = outcomes
        .iter()
        .filter(|l| l.status == LaunchStatus::Held)
        .count();
    assert!(
        outcomes
            .iter()
            .filter(|l| l.status == LaunchStatus::Held)
            .all(|l| l.reason.as_deref() == Some("slot_passed")),
        "held only for their passed slots"
    );
    println!("{held} overdue launches held with slot_passed and planned again");
    p.stop_all()
}

/// Hole 4: launch commands already on their way to the dispatcher when a
/// pause comes are held at the last hop, with the pause as the reason, and
/// placed once it lifts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_holds_launches_already_queued_for_the_dispatcher() -> Result<()> {
    const LAUNCHES: usize = 5;
    let mut p = Pipeline::new("pause", quick_calls()).await?;
    p.settings(2, 10).await?;
    // The dispatcher is down: launches queue on launch-commands.
    p.start(&[Role::Contact, Role::Scheduler])?;
    for n in 0..LAUNCHES {
        p.produce(p.launch_request(n, None)).await?;
    }
    let commands = p.reader("launch-commands")?;
    let mut queued: Vec<LaunchCommand> = Vec::new();
    read_until(&commands, &mut queued, Duration::from_secs(90), |q| {
        q.len() >= LAUNCHES
    })
    .await?;

    p.system_pause(true).await?;
    p.start(&[Role::Dispatcher])?;
    let launches = p.reader("call-launches")?;
    let mut outcomes: Vec<CallLaunch> = Vec::new();
    read_until(&launches, &mut outcomes, Duration::from_secs(60), |o| {
        o.len() >= LAUNCHES
    })
    .await?;
    for outcome in &outcomes {
        assert_eq!(outcome.status, LaunchStatus::Held, "{outcome:?}");
        assert_eq!(outcome.reason.as_deref(), Some("system_paused"));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(p.creates().is_empty(), "no call while paused");

    // Lifted: each held job is planned again and placed, once.
    let lifted = Utc::now();
    p.system_pause(false).await?;
    read_until(&launches, &mut outcomes, Duration::from_secs(90), |o| {
        o.iter()
            .filter(|l| l.status == LaunchStatus::Accepted)
            .count()
            >= LAUNCHES
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let creates = p.creates();
    assert_eq!(creates.len(), LAUNCHES, "one call per contact");
    assert!(creates.iter().all(|c| c.created_at >= lifted));
    let mut contacts: Vec<_> = creates
        .iter()
        .filter_map(|c| c.target.as_ref().and_then(|t| t.contact_id.clone()))
        .collect();
    contacts.sort();
    let mut expected: Vec<_> = (0..LAUNCHES).map(contact).collect();
    expected.sort();
    assert_eq!(contacts, expected);
    p.stop_all()
}

/// Reads `contact-state` until the latest state of `contact` satisfies
/// `done`, then on until the topic is quiet for a second: the latest state.
async fn state_of(
    p: &Pipeline,
    contact: &str,
    within: Duration,
    done: impl Fn(&ContactState) -> bool,
) -> Result<ContactState> {
    let reader = p.reader("contact-state")?;
    let mut states: Vec<ContactState> = Vec::new();
    read_until(&reader, &mut states, within, |s| {
        s.iter()
            .rev()
            .find(|s| s.contact_id == contact)
            .is_some_and(&done)
    })
    .await?;
    while let Ok(message) = tokio::time::timeout(Duration::from_secs(1), reader.recv()).await {
        use rdkafka::message::Message as _;
        if let Ok(state) = ContactState::decode(message?.payload().unwrap_or_default()) {
            states.push(state);
        }
    }
    Ok(states
        .into_iter()
        .rev()
        .find(|s| s.contact_id == contact)
        .expect("read until found"))
}

/// Hole 1: the lead says "stop" in a call; the CRM's next launch request
/// for them says `do_not_call: false`. Nothing is planned and no second call
/// reaches the platform.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crm_false_never_lifts_the_leads_opt_out_on_the_broker() -> Result<()> {
    let mut p = Pipeline::new("optout", quick_calls()).await?;
    p.settings(2, 10).await?;
    p.start(&[Role::Contact, Role::Scheduler, Role::Dispatcher])?;
    p.produce(p.launch_request(0, None)).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while p.creates().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let call = p.creates().pop().expect("the first call was placed");
    let launch = call
        .target
        .as_ref()
        .and_then(|t| t.launch_id.as_deref())
        .and_then(|l| l.parse().ok());
    // The call's result, as the gateway writes it: the lead opted out.
    let mut ended = support::pipeline::completed(&call.sid, &contact(0), launch);
    ended.analysis = Some(CallAnalysis {
        do_not_call: true,
        ..CallAnalysis::default()
    });
    p.produce(ended).await?;
    state_of(&p, &contact(0), Duration::from_secs(60), |s| s.do_not_call).await?;

    // The CRM, which never heard of it, asks for the lead again.
    let mut again = p.launch_request(0, None);
    again.event_id = uuid::Uuid::new_v4();
    again.request_id = Some("r2".into());
    again.campaign_id = Some("reengage".into());
    if let Some(details) = again.contact.as_mut() {
        details.do_not_call = Some(false);
    }
    p.produce(again).await?;
    let audit = p.reader("audit")?;
    let mut audits: Vec<AuditEvent> = Vec::new();
    read_until(&audit, &mut audits, Duration::from_secs(60), |a| {
        a.iter().any(|a| a.reason.as_deref() == Some("do_not_call"))
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(p.creates().len(), 1, "no second call");
    let state = state_of(&p, &contact(0), Duration::from_secs(10), |_| true).await?;
    assert!(state.do_not_call, "the opt-out stands");
    p.stop_all()
}

/// Hole 6: a launch the dispatcher refuses (a number that is not E.164)
/// returns to the workflow: the contact fails with the reason instead of
/// waiting in `dispatching` for a call that will never report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_launch_returns_to_the_workflow_on_the_broker() -> Result<()> {
    let mut p = Pipeline::new("refused", quick_calls()).await?;
    p.settings(2, 10).await?;
    p.start(&[Role::Contact, Role::Scheduler, Role::Dispatcher])?;
    let mut request = p.launch_request(0, None);
    if let Some(details) = request.contact.as_mut() {
        details.phone_number = Some("555-0100".into());
    }
    p.produce(request).await?;
    let state = state_of(&p, &contact(0), Duration::from_secs(90), |s| {
        s.workflow_state == WorkflowState::Failed
    })
    .await?;
    let job = state.jobs.first().expect("the job");
    assert_eq!(job.state, JobState::Cancelled);
    assert_eq!(job.reason, "invalid_number");
    assert!(p.creates().is_empty());
    p.stop_all()
}
