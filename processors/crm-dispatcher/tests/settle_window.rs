//! One contact waits out its settle window; the others do not wait for it.
//! On the real broker and the simulator over HTTP: a create answered 503
//! (which may have applied it) is searched for, and while the search finds
//! nothing it is never sent again until its settle window is over; the
//! contact's next command waits behind it; meanwhile forty commands of ten
//! other contacts all apply. Then the create goes again, once.

mod support;

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use callstream_schemas::{CrmAction, CrmResultStatus};
use support::broker::*;

/// The window of this test: long enough that the other contacts' forty
/// commands fit in it many times over on a loaded machine.
const WINDOW: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contact_waiting_out_its_window_holds_no_other_contact() -> Result<()> {
    let sim = Sim::start(scaled_search_lag(
        callstream_sim_crm::CrmBehaviour::default(),
    ))
    .await?;
    let mut stack = Stack::new("crm-window", &sim).await?;
    stack.config.policy.settle_window = WINDOW;
    stack.config.policy.search_interval = Duration::from_secs(2);
    let collected = stack.collect()?;
    let running = stack.run_in_process()?;

    // Once the dispatcher is at work (a first command applied) ...
    let warm = command(
        &format!("{}-warm", stack.app_id),
        CrmAction::AddNote,
        0,
        now_ms(),
    );
    stack.send(&warm).await?;
    collected
        .wait_for(&[warm.operation_id], Duration::from_secs(120))
        .await?;

    // ... the CRM goes down while contact a's create is sent.
    let a = format!("{}-a", stack.app_id);
    let first = command(&a, CrmAction::AddNote, 0, now_ms());
    let second = command(&a, CrmAction::CreateTask, 1, now_ms());
    let op = first.operation_id.to_string();
    sim.state
        .set_outage(Instant::now(), Duration::from_secs(60));
    stack.send(&first).await?;
    stack.send(&second).await?;
    let refused_at = loop {
        if let Some(at) = sim
            .log
            .entries()
            .into_iter()
            .find(|l| l.status == 503 && l.body.contains(&op))
            .map(|l| l.at)
        {
            break at;
        }
        ensure!(
            !running.is_finished(),
            "the dispatcher stopped before sending a's create"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    sim.state.set_outage(Instant::now(), Duration::ZERO);

    // Ten other contacts' forty commands all apply while a waits.
    let mut others = Vec::new();
    for seq in 0..4 {
        for c in 0..10 {
            let contact = format!("{}-b{c}", stack.app_id);
            let action = [CrmAction::AddNote, CrmAction::CreateTask][c % 2];
            let cmd = command(&contact, action, seq, now_ms());
            stack.send(&cmd).await?;
            others.push(cmd.operation_id);
        }
    }
    collected
        .wait_for(&others, Duration::from_secs(120))
        .await?;
    let by_op = collected.by_op();
    ensure!(
        !by_op.contains_key(&first.operation_id) && !by_op.contains_key(&second.operation_id),
        "a settled before the other contacts' commands were all applied"
    );

    // Then a's create goes again, once its window is over; its task after it.
    collected
        .wait_for(
            &[first.operation_id, second.operation_id],
            WINDOW + Duration::from_secs(120),
        )
        .await?;
    running.stop()?;
    let by_op = collected.by_op();
    let (first_at, first_result) = by_op[&first.operation_id][0].clone();
    let (second_at, _) = by_op[&second.operation_id][0].clone();
    ensure!(
        first_result.status == CrmResultStatus::Applied,
        "a's create ended {:?}",
        first_result.status
    );
    ensure!(second_at >= first_at, "a's task went before its note");
    let log = sim.log.entries();
    let creates: Vec<_> = log
        .iter()
        .filter(|l| l.body.contains(&op) && !l.body.contains("filterGroups"))
        .collect();
    let searches = log
        .iter()
        .filter(|l| l.body.contains(&op) && l.body.contains("filterGroups"))
        .count();
    ensure!(
        creates.len() == 2,
        "a's create was sent {} times: once refused, once after its window",
        creates.len()
    );
    let again = creates[1].at.duration_since(refused_at);
    ensure!(
        again >= WINDOW - Duration::from_secs(1),
        "a's create went again {again:?} after the first, inside its {WINDOW:?} window"
    );
    ensure!(searches >= 2, "a was searched for {searches} times");
    let stats = sim.stats().await?;
    ensure!(
        stats["op_ids"][&op] == 1,
        "a's note is in the CRM {} times",
        stats["op_ids"][&op]
    );
    let most = stats["max_searches_in_second"]
        .as_u64()
        .context("the simulator's search count")?;
    ensure!(most <= 5, "{most} searches in one second");
    eprintln!(
        "a: refused, searched {searches} times, created again {:.1} s later; the other 40 \
         commands applied meanwhile",
        again.as_secs_f64()
    );
    Ok(())
}
