//! The runtime against the real broker: the counting processor runs as its
//! own OS process and is killed with SIGKILL mid-stream, again and again;
//! afterwards a `read_committed` reader must see exactly one output per
//! input, and the restored counts must equal the true counts. With two
//! instances, the survivor must really take over the killed one's
//! partitions (as the group coordinator reports them) and state.

mod support;

use std::time::Duration;

use anyhow::{ensure, Result};
use rand::Rng;
use support::runtime::{
    await_assignment, check_exactly_once, produce_inputs, read_topic, restored_counts, true_counts,
    Instance, Topics, PARTITIONS,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_loses_and_repeats_nothing() -> Result<()> {
    const INPUTS: usize = 100_000;
    const KEYS: usize = 1_000;
    const KILLS: usize = 6;
    let topics = Topics::create("rt-crash").await?;
    let feeder = tokio::spawn(produce_inputs(
        topics.input.clone(),
        INPUTS,
        KEYS,
        Duration::from_secs(20),
    ));

    let mut rng = rand::rng();
    let mut instance = Instance::start(&topics, "0")?;
    for _ in 0..KILLS {
        tokio::time::sleep(Duration::from_millis(rng.random_range(1_500..4_000))).await;
        instance.kill()?;
        instance = Instance::start(&topics, "0")?;
    }
    feeder.await??;
    let outputs = read_topic(&topics.output, INPUTS, Duration::from_secs(180)).await?;
    instance.stop()?;
    check_exactly_once(&outputs, INPUTS, KEYS)?;
    assert_eq!(
        restored_counts(&topics, KEYS).await?,
        true_counts(INPUTS, KEYS)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instance_hands_its_partitions_and_state_to_the_other() -> Result<()> {
    const INPUTS: usize = 30_000;
    const KEYS: usize = 300;
    let topics = Topics::create("rt-rebalance").await?;
    let (a, b) = (format!("{}-a", topics.app), format!("{}-b", topics.app));
    let feeder = tokio::spawn(produce_inputs(
        topics.input.clone(),
        INPUTS,
        KEYS,
        Duration::from_secs(15),
    ));
    let first = Instance::start(&topics, "a")?;
    let second = Instance::start(&topics, "b")?;

    // Both hold partitions, between them all of them, before the kill.
    let before = await_assignment(&topics.app, &topics.input, Duration::from_secs(30), |o| {
        o.len() == 2
            && o.values().all(|p| !p.is_empty())
            && o.values().map(|p| p.len()).sum::<usize>() == PARTITIONS as usize
    })
    .await?;
    let orphaned = before[&a].clone();
    first.kill()?;
    ensure!(
        !feeder.is_finished(),
        "inputs must still be arriving after the kill, for the survivor to process"
    );

    // Once the killed member's session expires, the coordinator gives
    // every partition to the survivor, the killed one's included.
    let after = await_assignment(&topics.app, &topics.input, Duration::from_secs(60), |o| {
        o.len() == 1 && o.get(&b).is_some_and(|p| p.len() == PARTITIONS as usize)
    })
    .await?;
    ensure!(
        orphaned.is_subset(&after[&b]),
        "{b} holds {:?}, not all of {a}'s {orphaned:?}",
        after[&b]
    );

    feeder.await??;
    let outputs = read_topic(&topics.output, INPUTS, Duration::from_secs(120)).await?;
    second.stop()?;
    // Every input on the orphaned partitions after the kill was handled by
    // the survivor (the other is dead), each exactly once, and per key the
    // counts continue from the killed one's committed state: no restart at 1.
    check_exactly_once(&outputs, INPUTS, KEYS)?;
    assert_eq!(
        restored_counts(&topics, KEYS).await?,
        true_counts(INPUTS, KEYS)
    );
    Ok(())
}
