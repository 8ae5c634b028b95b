//! Never twice, through crashes: the dispatcher runs as its own OS process
//! against the real broker and the CRM simulator over HTTP, and is killed
//! with SIGKILL at random moments while 2,000 commands flow and the
//! simulator applies 10% of writes and then answers too late, its search
//! index lagging each write by a long-tailed delay (HubSpot's shape, scaled
//! down: a median of 500 ms, the longest 8 s, so a search often misses a
//! write that landed). Afterwards the simulator holds every note, task and
//! call exactly once, every command ended applied (or failed with an
//! exception), no window of the CRM's limit ever saw more requests than the
//! limit, and no second more searches than the search limit.

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use callstream_schemas::{CrmAction, CrmResultStatus};
use rand::Rng;
use support::broker::*;

const COMMANDS: usize = 2_000;
const CONTACTS: usize = 50;
/// The simulator's (and so the dispatcher's) limit: HubSpot's shape, ten
/// times its size, so 2,000 commands take seconds rather than minutes.
const LIMIT: u32 = 1_000;
/// Its search limit per second, scaled the same: HubSpot's 5, ten times.
const SEARCH_LIMIT: u32 = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_never_writes_a_note_or_task_twice() -> Result<()> {
    let sim = Sim::start(scaled_search_lag(callstream_sim_crm::CrmBehaviour {
        rate_limit_max: LIMIT,
        rate_limit_window_ms: 10_000,
        search_rate_max: SEARCH_LIMIT,
        timeout_share: 0.10,
        // Past the dispatcher's 1.5 s request timeout: applied, unanswered.
        timeout_ms: 3_000,
        ..callstream_sim_crm::CrmBehaviour::default()
    }))
    .await?;
    let mut stack = Stack::new("crm-crash", &sim).await?;
    stack.config.rate_limit.max_requests = LIMIT;
    stack.config.search_limit.max_requests = SEARCH_LIMIT;
    let collected = stack.collect()?;

    let actions = [
        CrmAction::AddNote,
        CrmAction::CreateTask,
        CrmAction::LogCall,
        CrmAction::UpdateContact,
    ];
    let started_ms = now_ms();
    let commands: Vec<_> = (0..COMMANDS)
        .map(|i| {
            let contact = format!("{}-c{}", stack.app_id, i % CONTACTS);
            let seq = (i / CONTACTS) as u64;
            command(
                &contact,
                actions[i % actions.len()],
                seq,
                started_ms + i as i64,
            )
        })
        .collect();

    let mut child = stack.spawn()?;
    let producing = {
        let commands = commands.clone();
        let stack = Stack {
            topics: stack.topics.clone(),
            app_id: stack.app_id.clone(),
            config: stack.config.clone(),
            producer: callstream_e2e::producer()?,
        };
        tokio::spawn(async move {
            // Spread over about 20 s, so kills land mid-stream.
            for chunk in commands.chunks(100) {
                for cmd in chunk {
                    stack.send(cmd).await?;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            anyhow::Ok(())
        })
    };

    let kills = 6;
    for kill in 0..kills {
        let wait = rand::rng().random_range(1_500..5_000);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        child.kill()?;
        child.wait()?;
        eprintln!("kill {} after {wait} ms", kill + 1);
        child = stack.spawn()?;
    }
    producing.await??;

    let ops: Vec<_> = commands.iter().map(|c| c.operation_id).collect();
    let waited = Instant::now();
    collected.wait_for(&ops, Duration::from_secs(240)).await?;
    eprintln!(
        "all results {} s after the last kill",
        waited.elapsed().as_secs()
    );
    // A little longer, to catch any result emitted twice.
    tokio::time::sleep(Duration::from_secs(3)).await;
    child.kill()?;
    child.wait()?;

    let by_op = collected.by_op();
    let exceptions = collected.exceptions();
    let mut statuses: HashMap<CrmResultStatus, usize> = HashMap::new();
    for cmd in &commands {
        let results = &by_op[&cmd.operation_id];
        ensure!(
            results.len() == 1,
            "{} results for one command",
            results.len()
        );
        let status = results[0].1.status;
        ensure!(is_final(status), "a command ended {status:?}");
        if status == CrmResultStatus::Failed {
            ensure!(
                exceptions
                    .iter()
                    .any(|e| e.operation_id == Some(cmd.operation_id)),
                "a failed command without its exception"
            );
        }
        *statuses.entry(status).or_default() += 1;
    }
    eprintln!("statuses: {statuses:?}");

    let stats = sim.stats().await?;
    eprintln!(
        "CRM: requests {}, late answers {}, throttled {}, most in a window {}",
        stats["requests_total"],
        stats["late_answers"],
        stats["throttled"],
        stats["max_requests_in_window"]
    );
    ensure!(
        stats["duplicate_creates_total"] == 0,
        "duplicates in the CRM: {}",
        stats["duplicate_creates"]
    );
    // Every create that settled in the CRM is there exactly once.
    for cmd in commands
        .iter()
        .filter(|c| c.action != CrmAction::UpdateContact)
    {
        let status = by_op[&cmd.operation_id][0].1.status;
        if matches!(
            status,
            CrmResultStatus::Applied | CrmResultStatus::AlreadyApplied
        ) {
            let writes = &stats["op_ids"][cmd.operation_id.to_string()];
            ensure!(
                writes == 1,
                "op {} written {writes} times",
                cmd.operation_id
            );
        }
    }
    let late = stats["late_answers"].as_u64().unwrap_or_default();
    ensure!(late > 100, "the fault hardly fired: {late} late answers");
    let most = stats["max_requests_in_window"].as_u64().unwrap_or(u64::MAX);
    ensure!(most <= u64::from(LIMIT), "{most} requests in one window");
    let searches = stats["max_searches_in_second"].as_u64().unwrap_or(u64::MAX);
    eprintln!(
        "searches: at most {searches} in a second (limit {SEARCH_LIMIT}), {} refused; search lag \
         median {} ms, p99 {} ms, longest {} ms",
        stats["search_throttled"],
        stats["search_lag_p50_ms"],
        stats["search_lag_p99_ms"],
        stats["search_lag_max_ms"]
    );
    ensure!(
        searches <= u64::from(SEARCH_LIMIT),
        "{searches} searches in one second"
    );
    Ok(())
}
