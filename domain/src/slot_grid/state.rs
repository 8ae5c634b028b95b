//! The grid's durable form: its config and the map slot index → job ids.
//! Everything else is rebuilt on restore, so the stored state is as small
//! as the bookings themselves and can be kept whole or one slot per key.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use super::{FullRuns, GridConfig, GridConfigError, JobId, SlotGrid};

/// Why stored slots could not be restored into a grid.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RestoreError {
    #[error("invalid grid config: {0}")]
    Config(#[from] GridConfigError),
    #[error("job {job} is booked in slot {first} and in slot {second}")]
    JobInTwoSlots { job: JobId, first: u64, second: u64 },
    #[error("slot {index} starts outside the representable time range")]
    SlotOutOfRange { index: u64 },
}

#[derive(Serialize)]
struct StateRef<'a> {
    config: &'a GridConfig,
    slots: &'a BTreeMap<u64, Vec<JobId>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateOwned {
    config: GridConfig,
    slots: BTreeMap<u64, Vec<JobId>>,
}

impl Serialize for SlotGrid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StateRef {
            config: &self.config,
            slots: &self.slots,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SlotGrid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let state = StateOwned::deserialize(deserializer)?;
        SlotGrid::from_slots(state.config, state.slots).map_err(serde::de::Error::custom)
    }
}

impl SlotGrid {
    /// Rebuilds a grid from stored slots (e.g. one store entry per slot).
    /// Empty slots are dropped; a slot over capacity is kept as it is (the
    /// capacity may have been lowered after it was booked).
    pub fn from_slots(
        config: GridConfig,
        slots: impl IntoIterator<Item = (u64, Vec<JobId>)>,
    ) -> Result<Self, RestoreError> {
        let mut grid = SlotGrid::new(config)?;
        let mut jobs = HashMap::new();
        let mut kept = BTreeMap::new();
        for (index, slot_jobs) in slots {
            if slot_jobs.is_empty() {
                continue;
            }
            if grid.slot_start(index).is_none() {
                return Err(RestoreError::SlotOutOfRange { index });
            }
            for &job in &slot_jobs {
                if let Some(first) = jobs.insert(job, index) {
                    return Err(RestoreError::JobInTwoSlots {
                        job,
                        first: first.min(index),
                        second: first.max(index),
                    });
                }
            }
            // A repeated index in the input would hide jobs of the first.
            if let Some(previous) = kept.insert(index, slot_jobs) {
                if let Some(&job) = previous.first() {
                    return Err(RestoreError::JobInTwoSlots {
                        job,
                        first: index,
                        second: index,
                    });
                }
            }
        }
        grid.slots = kept;
        grid.jobs = jobs;
        grid.full = FullRuns::default();
        grid.rebuild_full_runs();
        Ok(grid)
    }
}
