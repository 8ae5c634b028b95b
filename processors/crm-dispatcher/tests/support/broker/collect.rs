//! What a `read_committed` reader of the dispatcher's outputs has seen:
//! results (with when they arrived), exceptions and audit events, and
//! waits for them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use callstream_schemas::{AuditEvent, CrmResult, ExceptionEvent};
use uuid::Uuid;

#[derive(Default)]
pub struct Seen {
    pub results: Vec<(Instant, CrmResult)>,
    pub exceptions: Vec<ExceptionEvent>,
    pub audits: Vec<AuditEvent>,
}

/// Results and exceptions as a `read_committed` reader sees them.
#[derive(Clone, Default)]
pub struct Collected(pub Arc<Mutex<Seen>>);

impl Collected {
    /// Waits until every op of `ops` has a result, or `timeout` passes.
    pub async fn wait_for(&self, ops: &[Uuid], timeout: Duration) -> Result<()> {
        self.wait_for_n(ops, 1, timeout).await
    }

    /// Waits until every op of `ops` has `n` results, or `timeout` passes.
    pub async fn wait_for_n(&self, ops: &[Uuid], n: usize, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let missing = {
                let seen = self.0.lock().unwrap();
                let mut done: HashMap<Uuid, usize> = HashMap::new();
                for (_, r) in &seen.results {
                    *done.entry(r.operation_id).or_default() += 1;
                }
                ops.iter()
                    .filter(|op| done.get(op).copied().unwrap_or(0) < n)
                    .count()
            };
            if missing == 0 {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{missing} of {} commands have no result after {timeout:?}",
                ops.len()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Results per operation id.
    pub fn by_op(&self) -> HashMap<Uuid, Vec<(Instant, CrmResult)>> {
        let mut map: HashMap<Uuid, Vec<_>> = HashMap::new();
        for (at, result) in &self.0.lock().unwrap().results {
            map.entry(result.operation_id)
                .or_default()
                .push((*at, result.clone()));
        }
        map
    }

    pub fn exceptions(&self) -> Vec<ExceptionEvent> {
        self.0.lock().unwrap().exceptions.clone()
    }

    /// Waits until the operator commands `ids` are audited; their audits.
    pub async fn audits_of(&self, ids: &[Uuid], timeout: Duration) -> Result<Vec<AuditEvent>> {
        let deadline = Instant::now() + timeout;
        loop {
            let found: Vec<AuditEvent> = {
                let seen = self.0.lock().unwrap();
                ids.iter()
                    .filter_map(|id| {
                        seen.audits
                            .iter()
                            .find(|a| a.command_id == Some(*id))
                            .cloned()
                    })
                    .collect()
            };
            if found.len() == ids.len() {
                return Ok(found);
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{} of {} operator commands not audited after {timeout:?}",
                ids.len() - found.len(),
                ids.len()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}
