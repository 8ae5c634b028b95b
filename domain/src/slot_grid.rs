//! The slot grid: one tenant's launch slots, and the allocator that places
//! each planned call in one.
//!
//! Time is cut into slots of `slot_seconds` (75 s by default) counted from
//! the fixed [`GRID_EPOCH_UNIX_SECONDS`], 2024-01-01T00:00:00Z: slot `i`
//! starts at `epoch + i × slot_seconds`. A slot holds at most
//! `capacity_per_slot` launches (one by default), so with the defaults no
//! 5-minute window, fixed or rolling, holds more than four.
//!
//! Guarantees of [`SlotGrid::allocate`]: it returns the first slot whose
//! start is at or after `earliest`, before `horizon`, allowed by the
//! [`Availability`] and below capacity, and it checked exactly that slot
//! before booking it; it never moves or removes a booked job; when no slot
//! qualifies it books nothing and returns a typed [`Refusal`]. The same
//! sequence of calls always yields the same grid.
//!
//! The scheduler partition that owns a tenant is the grid's single writer.
//! The state serialises as `config` plus a map slot index → job ids, so it
//! can also be stored one slot per key (see [`SlotGrid::slot_jobs`] and
//! [`SlotGrid::from_slots`]).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

use crate::Availability;

mod runs;
mod state;
mod windows;

use runs::FullRuns;
pub use state::RestoreError;

/// The grid's epoch, 2024-01-01T00:00:00Z, as Unix seconds. Fixed forever:
/// stored slot indices count from it.
pub const GRID_EPOCH_UNIX_SECONDS: i64 = 1_704_067_200;

/// A planned call's id.
pub type JobId = Uuid;

/// One tenant's grid settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GridConfig {
    /// Length of a slot in seconds (default 75).
    pub slot_seconds: u32,
    /// Launches a slot may hold (default 1).
    pub capacity_per_slot: u32,
}

impl Default for GridConfig {
    fn default() -> Self {
        GridConfig {
            slot_seconds: 75,
            capacity_per_slot: 1,
        }
    }
}

impl GridConfig {
    pub fn validate(&self) -> Result<(), GridConfigError> {
        if self.slot_seconds == 0 {
            return Err(GridConfigError::ZeroSlotSeconds);
        }
        if self.capacity_per_slot == 0 {
            return Err(GridConfigError::ZeroCapacity);
        }
        Ok(())
    }

    /// The most launches any window of `window_seconds` can hold: the number
    /// of slot starts that fit in a half-open window, times the capacity.
    /// With the defaults and 300 s: 4.
    pub fn max_in_window(&self, window_seconds: u64) -> u64 {
        window_seconds.div_ceil(u64::from(self.slot_seconds.max(1)))
            * u64::from(self.capacity_per_slot)
    }
}

/// A grid setting that cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum GridConfigError {
    #[error("slot_seconds must be at least 1")]
    ZeroSlotSeconds,
    #[error("capacity_per_slot must be at least 1")]
    ZeroCapacity,
    /// Slot indices mean instants only under one slot length, so it can
    /// change only while the grid is empty (e.g. after pruning).
    #[error("slot_seconds cannot change while {booked} jobs are booked")]
    SlotLengthChangeWhileBooked { booked: usize },
}

/// A slot: its index from the epoch and the instant it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Slot {
    pub index: u64,
    pub start: DateTime<Utc>,
}

/// Why [`SlotGrid::allocate`] booked nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Refusal {
    /// No slot at or after `earliest` and before `horizon` is both free and
    /// allowed. The caller raises an exception; retrying with the same
    /// horizon cannot help.
    #[error("no free slot allowed between {earliest} and {horizon}")]
    NoFreeSlot {
        earliest: DateTime<Utc>,
        horizon: DateTime<Utc>,
    },
    /// The job already holds `slot`; it was not moved (a replayed request).
    #[error("job already booked in slot {}", slot.index)]
    AlreadyBooked { slot: Slot },
}

/// One tenant's booked slots.
#[derive(Debug, Clone)]
pub struct SlotGrid {
    config: GridConfig,
    /// The durable state: slot index → jobs in booking order.
    slots: BTreeMap<u64, Vec<JobId>>,
    /// Derived from `slots`: where each job is, for cancels.
    jobs: HashMap<JobId, u64>,
    /// Derived from `slots`: stretches of full slots, for skipping.
    full: FullRuns,
}

impl PartialEq for SlotGrid {
    fn eq(&self, other: &Self) -> bool {
        // The other fields are derived from these two.
        self.config == other.config && self.slots == other.slots
    }
}

impl Eq for SlotGrid {}

impl SlotGrid {
    /// An empty grid. Fails only on an unusable config.
    pub fn new(config: GridConfig) -> Result<Self, GridConfigError> {
        config.validate()?;
        Ok(SlotGrid {
            config,
            slots: BTreeMap::new(),
            jobs: HashMap::new(),
            full: FullRuns::default(),
        })
    }

    pub fn config(&self) -> GridConfig {
        self.config
    }

    /// Applies new settings. A capacity change takes effect for the next
    /// allocation; jobs already booked stay where they are, even in a slot
    /// that is now over the lower capacity.
    pub fn set_config(&mut self, config: GridConfig) -> Result<(), GridConfigError> {
        config.validate()?;
        if config.slot_seconds != self.config.slot_seconds && !self.jobs.is_empty() {
            return Err(GridConfigError::SlotLengthChangeWhileBooked {
                booked: self.jobs.len(),
            });
        }
        self.config = config;
        self.rebuild_full_runs();
        Ok(())
    }

    /// The instant slot `index` starts, if it is representable.
    pub fn slot_start(&self, index: u64) -> Option<DateTime<Utc>> {
        let offset = i64::try_from(index)
            .ok()?
            .checked_mul(i64::from(self.config.slot_seconds))?;
        DateTime::from_timestamp(GRID_EPOCH_UNIX_SECONDS.checked_add(offset)?, 0)
    }

    /// The first slot starting at or after `at` (slot 0 for any instant
    /// before the epoch).
    pub fn slot_index_at_or_after(&self, at: DateTime<Utc>) -> u64 {
        let since_epoch = at.timestamp().saturating_sub(GRID_EPOCH_UNIX_SECONDS);
        if since_epoch < 0 {
            return 0;
        }
        // Round a fractional second up: the slot may not start before `at`.
        let secs = since_epoch as u64 + u64::from(at.timestamp_subsec_nanos() > 0);
        secs.div_ceil(u64::from(self.config.slot_seconds))
    }

    /// Books `job` into the first free, allowed slot starting in
    /// `[earliest, horizon)`.
    pub fn allocate(
        &mut self,
        job: JobId,
        earliest: DateTime<Utc>,
        availability: &dyn Availability,
        horizon: DateTime<Utc>,
    ) -> Result<Slot, Refusal> {
        if let Some(slot) = self.slot_of(job) {
            return Err(Refusal::AlreadyBooked { slot });
        }
        let refusal = Refusal::NoFreeSlot { earliest, horizon };
        let mut index = self.slot_index_at_or_after(earliest);
        loop {
            // Jump over booked stretches in one lookup...
            index = self.full.skip_full(index);
            let start = self.slot_start(index).ok_or(refusal)?;
            if start >= horizon {
                return Err(refusal);
            }
            if availability.is_allowed(start) {
                self.book(job, index);
                return Ok(Slot { index, start });
            }
            // ...and over closed stretches by asking the availability, never
            // walking them slot by slot. Progress is at least one slot even
            // if an availability answers inconsistently.
            let next = availability.next_allowed(start, horizon).ok_or(refusal)?;
            index = self
                .slot_index_at_or_after(next)
                .max(index.saturating_add(1));
        }
    }

    /// Frees the job's slot; returns the slot it held, or `None` if the job
    /// was not booked (cancelling twice is harmless).
    pub fn cancel(&mut self, job: JobId) -> Option<Slot> {
        let index = self.jobs.remove(&job)?;
        let capacity = self.capacity();
        let slot_jobs = self.slots.get_mut(&index)?;
        let was_full = slot_jobs.len() >= capacity;
        slot_jobs.retain(|j| *j != job);
        let now_full = slot_jobs.len() >= capacity;
        if slot_jobs.is_empty() {
            self.slots.remove(&index);
        }
        if was_full && !now_full {
            self.full.mark_not_full(index);
        }
        Some(Slot {
            index,
            start: self.slot_start(index)?,
        })
    }

    /// Where `job` is booked, if it is.
    pub fn slot_of(&self, job: JobId) -> Option<Slot> {
        let index = *self.jobs.get(&job)?;
        Some(Slot {
            index,
            start: self.slot_start(index)?,
        })
    }

    /// The jobs booked in slot `index`, in booking order.
    pub fn slot_jobs(&self, index: u64) -> &[JobId] {
        self.slots.get(&index).map_or(&[], Vec::as_slice)
    }

    /// Every occupied slot in ascending order, with its jobs.
    pub fn slots(&self) -> impl Iterator<Item = (u64, &[JobId])> + '_ {
        self.slots.iter().map(|(&i, jobs)| (i, jobs.as_slice()))
    }

    /// The occupied slots with indices in `range`, ascending, with their
    /// jobs (one lookup, however wide the range).
    pub fn slots_in(
        &self,
        range: std::ops::Range<u64>,
    ) -> impl Iterator<Item = (u64, &[JobId])> + '_ {
        let range = range.start..range.end.max(range.start);
        self.slots
            .range(range)
            .map(|(&i, jobs)| (i, jobs.as_slice()))
    }

    /// How many jobs are booked.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// How many slots hold at least one job.
    pub fn occupied_slots(&self) -> usize {
        self.slots.len()
    }

    /// Forgets every slot that starts before `before` (launched or past),
    /// keeping the state compact; returns what was removed so a per-slot
    /// store can delete those keys.
    pub fn prune_before(&mut self, before: DateTime<Utc>) -> Vec<(u64, Vec<JobId>)> {
        let first_kept = self.slot_index_at_or_after(before);
        let kept = self.slots.split_off(&first_kept);
        let removed = std::mem::replace(&mut self.slots, kept);
        for jobs in removed.values() {
            for job in jobs {
                self.jobs.remove(job);
            }
        }
        self.rebuild_full_runs();
        removed.into_iter().collect()
    }

    fn capacity(&self) -> usize {
        self.config.capacity_per_slot as usize
    }

    fn book(&mut self, job: JobId, index: u64) {
        let capacity = self.capacity();
        let slot_jobs = self.slots.entry(index).or_default();
        slot_jobs.push(job);
        if slot_jobs.len() == capacity {
            self.full.mark_full(index);
        }
        self.jobs.insert(job, index);
    }

    fn rebuild_full_runs(&mut self) {
        let capacity = self.capacity();
        self.full = FullRuns::from_full_slots(
            self.slots
                .iter()
                .filter(|(_, jobs)| jobs.len() >= capacity)
                .map(|(&i, _)| i),
        );
    }
}

/// A whole-second span, for the window helpers.
fn whole_seconds(span: TimeDelta) -> u64 {
    u64::try_from(span.num_seconds()).unwrap_or(0)
}

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
