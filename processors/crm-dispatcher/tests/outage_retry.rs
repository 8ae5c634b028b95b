//! An outage that outlasts the retry bound, on the real broker and the
//! simulator over HTTP: every command fails for good with a `crm_failed`
//! exception; once the CRM is back, an operator's retry of each exception
//! (the command `POST /v1/exceptions/{id}/retry` publishes) applies the
//! kept command exactly once (searched for first: the 503s may have
//! applied it), in order per contact, closes the exception and is audited;
//! a second retry of the same exception is rejected and writes nothing.

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use callstream_schemas::{AuditResult, CrmAction, CrmResultStatus, ExceptionStatus};
use support::broker::*;

const CONTACTS: usize = 4;
const PER_CONTACT: u64 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_failed_by_an_outage_apply_once_when_an_operator_retries_them() -> Result<()> {
    let sim = Sim::start(scaled_search_lag(
        callstream_sim_crm::CrmBehaviour::default(),
    ))
    .await?;
    let mut stack = Stack::new("crm-retry", &sim).await?;
    // A bound this outage exhausts: 3 failures, about 1.5 s a command with
    // the kit's delays (the default bound rides out about two minutes).
    stack.config.policy.retry.max_failures = 3;
    let collected = stack.collect()?;
    let running = stack.run_in_process()?;
    let outage = Duration::from_secs(15);
    let back_at = Instant::now() + outage;
    sim.state.set_outage(Instant::now(), outage);

    let mut commands = Vec::new();
    for seq in 0..PER_CONTACT {
        for c in 0..CONTACTS {
            let contact = format!("{}-c{c}", stack.app_id);
            let action = [CrmAction::CreateTask, CrmAction::AddNote][c % 2];
            let cmd = command(&contact, action, seq, now_ms());
            stack.send(&cmd).await?;
            commands.push(cmd);
        }
    }
    let ops: Vec<_> = commands.iter().map(|c| c.operation_id).collect();
    collected.wait_for(&ops, outage).await?;
    ensure!(
        Instant::now() < back_at,
        "the commands did not fail within the outage"
    );
    let by_op = collected.by_op();
    for op in &ops {
        let status = by_op[op][0].1.status;
        ensure!(status == CrmResultStatus::Failed, "{op} ended {status:?}");
    }
    let opened = collected.exceptions();
    ensure!(opened.len() == ops.len(), "{} exceptions", opened.len());
    let exception_of: HashMap<_, _> = opened
        .iter()
        .map(|e| (e.operation_id.unwrap(), e.clone()))
        .collect();

    // The CRM is back; the operator retries each, in the commands' order.
    tokio::time::sleep_until(back_at.into()).await;
    let mut retries = Vec::new();
    for cmd in &commands {
        let exception = &exception_of[&cmd.operation_id];
        let retry = retry_request(&exception.contact_id, exception.exception_id);
        stack.send_retry(&retry).await?;
        retries.push(retry.event_id);
    }
    let audits = collected
        .audits_of(&retries, Duration::from_secs(30))
        .await?;
    ensure!(
        audits.iter().all(|a| a.result == AuditResult::Applied),
        "{audits:?}"
    );
    collected
        .wait_for_n(&ops, 2, Duration::from_secs(60))
        .await?;

    // A second retry of one exception finds nothing to retry.
    let again = retry_request(&opened[0].contact_id, opened[0].exception_id);
    stack.send_retry(&again).await?;
    let refused = collected
        .audits_of(&[again.event_id], Duration::from_secs(30))
        .await?;
    ensure!(
        refused[0].result == AuditResult::Rejected,
        "{:?}",
        refused[0]
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    running.stop()?;

    let by_op = collected.by_op();
    let mut last_id: HashMap<&str, u64> = HashMap::new();
    for cmd in &commands {
        let results = &by_op[&cmd.operation_id];
        ensure!(results.len() == 2, "{} results", results.len());
        let retried = &results[1].1;
        ensure!(
            retried.status == CrmResultStatus::Applied,
            "retried: {:?} {:?}",
            retried.status,
            retried.error
        );
        let id: u64 = retried
            .crm_object_id
            .as_deref()
            .unwrap_or_default()
            .parse()?;
        let previous = last_id.insert(&cmd.contact_id, id);
        ensure!(previous.is_none_or(|p| p < id), "out of order");
    }
    let closed = collected
        .exceptions()
        .into_iter()
        .filter(|e| e.status == ExceptionStatus::Resolved)
        .count();
    ensure!(closed == ops.len(), "{closed} exceptions closed");

    let stats = sim.stats().await?;
    ensure!(stats["refused_outage"].as_u64().unwrap_or(0) >= 3 * ops.len() as u64);
    ensure!(stats["duplicate_creates_total"] == 0, "duplicates: {stats}");
    for op in &ops {
        let writes = stats["op_ids"][op.to_string()].as_u64().unwrap_or(0);
        ensure!(writes == 1, "{op} written {writes} times");
    }
    Ok(())
}
