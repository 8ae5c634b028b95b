//! The write switch, shadow mode and out-of-order facts on the real broker
//! and the simulator over HTTP: writes off records `suppressed` and nothing
//! reaches the CRM; switched on, the next command is applied without a
//! restart, and a replayed suppressed command too; shadow mode sends
//! nothing; a stale contact update is skipped and leaves the newer value.

mod support;

use std::time::Duration;

use anyhow::{ensure, Result};
use callstream_schemas::{ControlSetting, CrmAction, CrmResultStatus as Status};
use support::broker::*;

fn statuses(collected: &Collected, ops: &[uuid::Uuid]) -> Vec<Status> {
    let by_op = collected.by_op();
    ops.iter()
        .map(|op| by_op.get(op).and_then(|r| r.last()).map(|(_, r)| r.status))
        .map(|s| s.unwrap_or(Status::Unknown))
        .collect()
}

async fn requests(sim: &Sim) -> Result<u64> {
    Ok(sim.stats().await?["requests_total"]
        .as_u64()
        .unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_off_then_on_and_shadow_mode_take_effect_on_the_next_command() -> Result<()> {
    let sim = Sim::start(scaled_search_lag(
        callstream_sim_crm::CrmBehaviour::default(),
    ))
    .await?;
    let stack = Stack::new("crm-switch", &sim).await?;
    let collected = stack.collect()?;
    stack.switch(ControlSetting::CrmWrites, false).await?;
    let running = stack.run_in_process()?;
    let contact = format!("{}-c", stack.app_id);

    let off: Vec<_> = [
        CrmAction::AddNote,
        CrmAction::CreateTask,
        CrmAction::UpdateContact,
    ]
    .into_iter()
    .enumerate()
    .map(|(i, action)| command(&contact, action, i as u64, now_ms()))
    .collect();
    for cmd in &off {
        stack.send(cmd).await?;
    }
    let off_ops: Vec<_> = off.iter().map(|c| c.operation_id).collect();
    collected
        .wait_for(&off_ops, Duration::from_secs(60))
        .await?;
    ensure!(statuses(&collected, &off_ops) == [Status::Suppressed; 3]);
    ensure!(
        requests(&sim).await? == 0,
        "a request reached the CRM while writes were off"
    );

    // On again: the next command goes, no restart.
    stack.switch(ControlSetting::CrmWrites, true).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let on = command(&contact, CrmAction::AddNote, 10, now_ms());
    stack.send(&on).await?;
    // A suppressed command replayed is carried out now.
    stack.send(&off[0]).await?;
    let replay = off[0].operation_id;
    wait_until(&collected, replay, 2).await?;
    ensure!(statuses(&collected, &[on.operation_id, replay]) == [Status::Applied; 2]);
    ensure!(requests(&sim).await? == 2, "one create each");

    // Shadow mode: logged, not sent.
    stack.switch(ControlSetting::ShadowMode, true).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let shadow = command(&contact, CrmAction::LogCall, 11, now_ms());
    stack.send(&shadow).await?;
    collected
        .wait_for(&[shadow.operation_id], Duration::from_secs(60))
        .await?;
    ensure!(statuses(&collected, &[shadow.operation_id]) == [Status::Shadow]);
    ensure!(requests(&sim).await? == 2, "shadow mode sent a request");
    running.stop()
}

/// Waits until `op` has `count` results.
async fn wait_until(collected: &Collected, op: uuid::Uuid, count: usize) -> Result<()> {
    for _ in 0..240 {
        if collected.by_op().get(&op).map_or(0, Vec::len) >= count {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    anyhow::bail!("{op} never got {count} results")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_contact_update_is_skipped_and_the_newer_value_stays() -> Result<()> {
    let sim = Sim::start(scaled_search_lag(
        callstream_sim_crm::CrmBehaviour::default(),
    ))
    .await?;
    let stack = Stack::new("crm-stale", &sim).await?;
    let collected = stack.collect()?;
    let running = stack.run_in_process()?;
    let contact = format!("{}-c", stack.app_id);
    let t = now_ms();
    let mut newer = command(&contact, CrmAction::UpdateContact, 1, t + 200);
    newer.properties = [("callstream_last_outcome".to_owned(), "answered".to_owned())].into();
    // The older fact arrives second (a late event).
    let mut older = command(&contact, CrmAction::UpdateContact, 2, t + 100);
    older.properties = [("callstream_last_outcome".to_owned(), "no_answer".to_owned())].into();
    for cmd in [&newer, &older] {
        stack.send(cmd).await?;
    }
    let ops = [newer.operation_id, older.operation_id];
    collected.wait_for(&ops, Duration::from_secs(60)).await?;
    running.stop()?;
    ensure!(statuses(&collected, &ops) == [Status::Applied, Status::SkippedStale]);
    let held = sim.contact(&contact, "callstream_last_outcome").await?;
    ensure!(
        held["properties"]["callstream_last_outcome"] == "answered",
        "the CRM holds {held}"
    );
    ensure!(requests(&sim).await? == 2, "the stale update was sent");
    Ok(())
}
