//! State per open launch, from the changelogs: `launches` accepted launches
//! (one per contact, none completed, W far ahead) go through the detector,
//! which then stops; the `contacts` and timer changelogs are read back and
//! reduced to what a restore would load (the last value of every live
//! key), and their key plus value bytes are divided by the open launches.
//!
//! The timer changelog also holds each partition's stream time and the
//! delivery monitor's bucket timers; they are counted too (they are part of
//! what the open launches cost), which makes the figure slightly high.
//! The run also checks the runtime's timer-key format that the restore
//! phase writes by hand: every contact must have exactly its one key.

use std::time::Duration;

use anyhow::{bail, Result};
use callstream_bench::kafka::{preload_placed, Placed};
use callstream_completion_detector::CONTACTS_STORE;
use callstream_platform::{topics, KafkaSettings};
use callstream_runtime::spec::TIMER_STORE;
use tracing::{info, warn};
use uuid::Uuid;

use crate::load::latest_sizes;
use crate::records::{self, is_contact_timer, timer_key};
use crate::stack::{detector_config, start_instance, Names};

#[derive(Debug, Clone, Copy)]
pub struct StateSize {
    pub open_launches: u64,
    pub contact_bytes: u64,
    pub timer_bytes: u64,
}

impl StateSize {
    pub fn bytes_per_open_launch(&self) -> f64 {
        (self.contact_bytes + self.timer_bytes) as f64 / self.open_launches as f64
    }

    pub fn contact_bytes_per_open_launch(&self) -> f64 {
        self.contact_bytes as f64 / self.open_launches as f64
    }

    pub fn timer_bytes_per_open_launch(&self) -> f64 {
        self.timer_bytes as f64 / self.open_launches as f64
    }
}

const STATE_IDS: u64 = 0x5354;

pub fn measure(
    settings: &KafkaSettings,
    names: &Names,
    launches: u64,
    window: (i64, i64),
    timeout: Duration,
) -> Result<StateSize> {
    names.create(settings, false)?;
    let at = callstream_bench::kafka::now_micros() / 1000;
    let contact = |n: u64| format!("s{n}");
    info!(launches, "preloading open launches");
    preload_placed(
        settings,
        &names.name(topics::CALL_LAUNCHES),
        launches,
        |n, key, value| {
            let name = contact(n);
            key.extend_from_slice(name.as_bytes());
            value.extend(records::launch(
                n,
                &name,
                Uuid::from_u64_pair(STATE_IDS, n),
                at,
            )?);
            Ok(Placed {
                partition: None,
                timestamp_ms: Some(at),
            })
        },
    )?;
    let config = detector_config(names, window.0, window.1);
    let mut instance = start_instance(settings, names, config)?;
    instance.until_committed(launches, timeout)?;
    instance.stop()?;

    let partitions = names.topics.partitions;
    let contacts = latest_sizes(
        settings,
        &names.changelog(CONTACTS_STORE),
        partitions,
        timeout,
    )?;
    let timers = latest_sizes(settings, &names.changelog(TIMER_STORE), partitions, timeout)?;
    let bytes = |m: &std::collections::HashMap<Vec<u8>, usize>| -> u64 {
        m.iter().map(|(k, v)| (k.len() + v) as u64).sum()
    };
    if contacts.len() as u64 != launches {
        bail!(
            "the contacts changelog holds {} contacts, not the {launches} launched",
            contacts.len()
        );
    }
    let contact_timers = timers.keys().filter(|k| is_contact_timer(k)).count() as u64;
    let expected =
        (0..launches.min(100)).all(|n| timers.contains_key(&timer_key(contact(n).as_bytes())));
    if contact_timers != launches || !expected {
        warn!(
            contact_timers,
            launches,
            "the timer changelog does not hold one contact timer per launch in the \
             expected format; the restore phase's timers will not be what the detector writes"
        );
    }
    Ok(StateSize {
        open_launches: launches,
        contact_bytes: bytes(&contacts),
        timer_bytes: bytes(&timers),
    })
}
