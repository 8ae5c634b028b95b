//! The commands a run feeds the dispatcher and the results it reads back.
//!
//! Command `i` belongs to contact `i mod contacts` and is that contact's
//! `i / contacts`-th; actions rotate through a note, a task and a contact
//! update (whose fact time grows with the contact's sequence, so none is
//! stale). One command is one CRM request when nothing fails, so
//! commands/s is also CRM writes/s.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use callstream_platform::KafkaSettings;
use callstream_schemas::{CrmAction, CrmCommand, CrmResult, CrmResultStatus, Event};
use chrono::{DateTime, Utc};
use rdkafka::consumer::BaseConsumer;
use rdkafka::Message;
use uuid::Uuid;

use callstream_bench::kafka::{committed_reader, preload};

use crate::stack::TENANT;

/// Command `i` of a load over `contacts` contacts.
pub fn command(run: &str, i: u64, contacts: u64, base: DateTime<Utc>) -> CrmCommand {
    let contact = i % contacts;
    let seq = i / contacts;
    let action = match i % 3 {
        0 => CrmAction::AddNote,
        1 => CrmAction::CreateTask,
        _ => CrmAction::UpdateContact,
    };
    // Later commands of a contact carry later facts, as the workflow emits them.
    let fact_at = base + chrono::Duration::milliseconds(i64::try_from(seq).unwrap_or(i64::MAX));
    let mut properties = BTreeMap::new();
    if action == CrmAction::UpdateContact {
        properties.insert("callstream_seq".to_owned(), seq.to_string());
        properties.insert(
            "hs_lead_status".to_owned(),
            "ATTEMPTED_TO_CONTACT".to_owned(),
        );
    }
    CrmCommand {
        event_id: Uuid::new_v4(),
        tenant_id: TENANT.into(),
        occurred_at: fact_at,
        causation_id: None,
        correlation_id: None,
        operation_id: Uuid::new_v4(),
        // The run's name in the id: contacts of earlier runs never mix in the CRM.
        contact_id: format!("{run}-c{contact}"),
        action,
        call_id: Some(format!("call-{i}")),
        campaign_id: Some("bench".into()),
        fact_at,
        properties,
        subject: Some(format!("bench step {seq}")),
        body: Some(format!("outcome of call {i}: voicemail, retry planned")),
        due_at: None,
        owner_id: None,
    }
}

/// Loads `commands` commands into `topic`, keyed by contact.
pub fn load(
    settings: &KafkaSettings,
    topic: &str,
    run: &str,
    commands: u64,
    contacts: u64,
) -> Result<Duration> {
    let base = Utc::now();
    let mut failed = None;
    let took = preload(settings, topic, commands, |i, key, value| {
        let command = command(run, i, contacts, base);
        key.extend_from_slice(command.contact_id.as_bytes());
        match command.encode() {
            Ok(bytes) => value.extend_from_slice(&bytes),
            Err(error) => {
                failed.get_or_insert(error);
            }
        }
    })?;
    if let Some(error) = failed {
        return Err(error).context("encoding a CRM command");
    }
    Ok(took)
}

/// Results seen by a `read_committed` reader, by status.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub applied: u64,
    pub already_applied: u64,
    pub other: BTreeMap<String, u64>,
    pub undecodable: u64,
}

impl Tally {
    /// Commands that reached the CRM (or were found there).
    pub fn done(&self) -> u64 {
        self.applied + self.already_applied
    }

    pub fn total(&self) -> u64 {
        self.done() + self.other.values().sum::<u64>() + self.undecodable
    }

    fn add(&mut self, result: &CrmResult) {
        match result.status {
            CrmResultStatus::Applied => self.applied += 1,
            CrmResultStatus::AlreadyApplied => self.already_applied += 1,
            other => {
                if self.other.is_empty() {
                    tracing::warn!(status = %other, error = ?result.error,
                        contact = %result.contact_id, "a command did not apply");
                }
                *self.other.entry(other.to_string()).or_default() += 1;
            }
        }
    }
}

/// Reads `crm-results` as a downstream consumer would.
pub struct Results {
    reader: BaseConsumer,
    pub tally: Tally,
}

impl Results {
    pub fn new(settings: &KafkaSettings, topic: &str, partitions: i32) -> Result<Self> {
        Ok(Self {
            reader: committed_reader(settings, topic, partitions, 50)?,
            tally: Tally::default(),
        })
    }

    /// Reads what is there, waiting at most `wait` for the first record;
    /// bounded, so the caller's clock checks still run under a flood.
    pub fn read_some(&mut self, wait: Duration) {
        let mut timeout = wait;
        for _ in 0..10_000 {
            match self.reader.poll(timeout) {
                Some(Ok(message)) => match message.payload().map(CrmResult::decode) {
                    Some(Ok(result)) => self.tally.add(&result),
                    _ => self.tally.undecodable += 1,
                },
                Some(Err(error)) => {
                    tracing::warn!(%error, "results reader error");
                    break;
                }
                None => break,
            }
            timeout = Duration::ZERO;
        }
    }
}
