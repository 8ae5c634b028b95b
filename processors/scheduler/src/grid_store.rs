//! A tenant's slot grid in the changelog-backed store, in chunks of
//! [`CHUNK_SLOTS`] slots, so one booking rewrites one small value (not the
//! whole grid of a busy tenant), plus a per-tenant index of the chunks
//! that hold bookings and a meta value (version and slot length).
//!
//! The allocator works on an in-memory [`SlotGrid`] cached per partition
//! and tenant. The cache is only a copy: every change to a grid stores a
//! new version, and a cached grid is used only while its version is the
//! stored one. So after an aborted transaction (the store rolls back, the
//! cache does not), a restore, or a partition that went to another instance
//! and came back, the grid is rebuilt from the store before it is used.
//!
//! A version is the writer's nonce (8 random bytes drawn when a cached grid
//! is built) and its count of writes. Only the writer that holds a cached
//! grid can produce that grid's next version, so a stored version equal to
//! the cached one means the store holds exactly what the cache does. This
//! costs a counter increment per change (the hash chain it replaces, a
//! UUIDv5 over the previous version and the cause, cost a SHA-1 per
//! booking), and it also tells apart two instances that made the same
//! change from the same state: a deterministic chain gave both the same
//! version even when their clocks placed the job in different slots.
//!
//! Store `grid` layout, per tenant `t` (`len` = u16 BE length of `t`):
//! - `b'm' len t` → version (16 bytes) then slot length (u32 BE seconds);
//! - `b'i' len t` → the chunk ids with bookings, ascending u64 BE;
//! - `b'c' len t chunk` (chunk u64 BE) → for each occupied slot: index
//!   (u64 BE), job count (u16 BE), the job ids (16 bytes each).

use std::collections::{BTreeSet, HashMap};

use callstream_domain::slot_grid::{GridConfig, JobId, SlotGrid};
use callstream_runtime::{Context, ProcessError};
use uuid::Uuid;

/// Slots per stored chunk: 80 minutes of 75 s slots.
pub const CHUNK_SLOTS: u64 = 64;

pub const GRID_STORE: &str = "grid";

fn tenant_key(tag: u8, tenant: &str) -> Vec<u8> {
    let bytes = tenant.as_bytes();
    let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
    let mut key = Vec::with_capacity(3 + bytes.len() + 8);
    key.push(tag);
    key.extend_from_slice(&len.to_be_bytes());
    key.extend_from_slice(&bytes[..usize::from(len)]);
    key
}

fn chunk_key(tenant: &str, chunk: u64) -> Vec<u8> {
    let mut key = tenant_key(b'c', tenant);
    key.extend_from_slice(&chunk.to_be_bytes());
    key
}

/// One tenant's grid as cached, with what is needed to write it back.
#[derive(Debug)]
pub struct CachedGrid {
    version: [u8; 16],
    /// This copy's nonce and its writes so far: the next version.
    nonce: u64,
    writes: u64,
    pub grid: SlotGrid,
    chunks: BTreeSet<u64>,
    /// The refused slot length last warned about, so the warning is logged once.
    warned_slot_seconds: Option<u32>,
}

/// Grids per (partition, tenant).
#[derive(Debug, Default)]
pub struct GridCache {
    grids: HashMap<(i32, String), CachedGrid>,
}

fn corrupt(what: &str, tenant: &str) -> ProcessError {
    ProcessError::Invalid(format!("stored {what} of tenant {tenant:?} is corrupt"))
}

impl GridCache {
    /// Forgets every cached grid (the next use rebuilds from the store).
    pub fn clear(&mut self) {
        self.grids.clear();
    }

    /// The tenant's grid, with the capacity `config` gives. The slot
    /// length changes only while the grid is empty (slot indices mean
    /// instants only under one length); otherwise the stored one stays.
    pub fn load(
        &mut self,
        ctx: &Context<'_>,
        tenant: &str,
        config: GridConfig,
    ) -> Result<&mut CachedGrid, ProcessError> {
        let meta = ctx.get(GRID_STORE, &tenant_key(b'm', tenant));
        let (version, slot_seconds) = match meta {
            None => ([0; 16], config.slot_seconds),
            Some(bytes) if bytes.len() == 20 => {
                let mut version = [0; 16];
                version.copy_from_slice(&bytes[..16]);
                let mut seconds = [0; 4];
                seconds.copy_from_slice(&bytes[16..]);
                (version, u32::from_be_bytes(seconds))
            }
            Some(_) => return Err(corrupt("grid meta", tenant)),
        };
        let cache_key = (ctx.partition(), tenant.to_owned());
        let fresh = self
            .grids
            .get(&cache_key)
            .is_some_and(|c| c.version == version);
        if !fresh {
            let rebuilt = rebuild(ctx, tenant, version, slot_seconds, config)?;
            self.grids.insert(cache_key.clone(), rebuilt);
        }
        let cached = self
            .grids
            .get_mut(&cache_key)
            .ok_or_else(|| corrupt("grid cache", tenant))?;
        let wanted = GridConfig {
            slot_seconds: if cached.grid.is_empty() {
                config.slot_seconds
            } else {
                cached.grid.config().slot_seconds
            },
            capacity_per_slot: config.capacity_per_slot,
        };
        if wanted != cached.grid.config() {
            if wanted.slot_seconds != cached.grid.config().slot_seconds {
                tracing::info!(
                    tenant,
                    from = cached.grid.config().slot_seconds,
                    to = wanted.slot_seconds,
                    "grid slot length changes (grid empty)"
                );
            }
            cached
                .grid
                .set_config(wanted)
                .map_err(|e| ProcessError::Invalid(format!("grid settings of {tenant:?}: {e}")))?;
        }
        if config.slot_seconds != cached.grid.config().slot_seconds
            && cached.warned_slot_seconds != Some(config.slot_seconds)
        {
            cached.warned_slot_seconds = Some(config.slot_seconds);
            tracing::warn!(
                tenant,
                kept = cached.grid.config().slot_seconds,
                asked = config.slot_seconds,
                "slot length cannot change while jobs are booked; keeping the current one"
            );
        }
        Ok(cached)
    }
}

fn rebuild(
    ctx: &Context<'_>,
    tenant: &str,
    version: [u8; 16],
    slot_seconds: u32,
    config: GridConfig,
) -> Result<CachedGrid, ProcessError> {
    let mut chunks = BTreeSet::new();
    if let Some(index) = ctx.get(GRID_STORE, &tenant_key(b'i', tenant)) {
        if index.len() % 8 != 0 {
            return Err(corrupt("chunk index", tenant));
        }
        for id in index.chunks_exact(8) {
            let mut bytes = [0; 8];
            bytes.copy_from_slice(id);
            chunks.insert(u64::from_be_bytes(bytes));
        }
    }
    let mut slots = Vec::new();
    for &chunk in &chunks {
        if let Some(bytes) = ctx.get(GRID_STORE, &chunk_key(tenant, chunk)) {
            decode_chunk(bytes, &mut slots).ok_or_else(|| corrupt("grid chunk", tenant))?;
        }
    }
    let config = GridConfig {
        slot_seconds,
        capacity_per_slot: config.capacity_per_slot,
    };
    let grid = SlotGrid::from_slots(config, slots)
        .map_err(|e| ProcessError::Invalid(format!("grid of tenant {tenant:?}: {e}")))?;
    Ok(CachedGrid {
        version,
        nonce: fresh_nonce(),
        writes: 0,
        grid,
        chunks,
        warned_slot_seconds: None,
    })
}

/// A nonce no other cached grid (of this process or any other) draws,
/// but with negligible probability: std's randomly keyed hasher over a
/// process-wide count.
fn fresh_nonce() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    static DRAWN: AtomicU64 = AtomicU64::new(0);
    RandomState::new().hash_one(DRAWN.fetch_add(1, Ordering::Relaxed))
}

fn decode_chunk(mut bytes: &[u8], out: &mut Vec<(u64, Vec<JobId>)>) -> Option<()> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, tail) = (bytes.get(..n)?, bytes.get(n..)?);
        *bytes = tail;
        Some(head)
    }
    while !bytes.is_empty() {
        let index = u64::from_be_bytes(take(&mut bytes, 8)?.try_into().ok()?);
        let count = u16::from_be_bytes(take(&mut bytes, 2)?.try_into().ok()?);
        let mut jobs = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            jobs.push(Uuid::from_slice(take(&mut bytes, 16)?).ok()?);
        }
        out.push((index, jobs));
    }
    Some(())
}

fn encode_chunk(grid: &SlotGrid, chunk: u64) -> Vec<u8> {
    let first = chunk.saturating_mul(CHUNK_SLOTS);
    let range = first..first.saturating_add(CHUNK_SLOTS);
    // Sized exactly: the store keeps the value as it is.
    let size = grid
        .slots_in(range.clone())
        .map(|(_, jobs)| 10 + 16 * jobs.len().min(usize::from(u16::MAX)))
        .sum();
    let mut out = Vec::with_capacity(size);
    for (index, jobs) in grid.slots_in(range) {
        let count = u16::try_from(jobs.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&index.to_be_bytes());
        out.extend_from_slice(&count.to_be_bytes());
        for job in &jobs[..usize::from(count)] {
            out.extend_from_slice(job.as_bytes());
        }
    }
    out
}

impl CachedGrid {
    /// Writes the chunks of `slots` (changed slots) back, with a new version.
    pub fn save(&mut self, ctx: &mut Context<'_>, tenant: &str, slots: &[u64]) {
        let mut index_changed = false;
        let touched: BTreeSet<u64> = slots.iter().map(|s| s / CHUNK_SLOTS).collect();
        for chunk in touched {
            let bytes = encode_chunk(&self.grid, chunk);
            if bytes.is_empty() {
                ctx.delete(GRID_STORE, chunk_key(tenant, chunk));
                index_changed |= self.chunks.remove(&chunk);
            } else {
                ctx.put(GRID_STORE, chunk_key(tenant, chunk), bytes);
                index_changed |= self.chunks.insert(chunk);
            }
        }
        if index_changed {
            self.write_index(ctx, tenant);
        }
        self.bump(ctx, tenant);
    }

    /// Drops the chunks that end at or before `before` (their slots are
    /// past and can never be allocated); returns how many jobs went.
    pub fn prune_chunks_before(
        &mut self,
        ctx: &mut Context<'_>,
        tenant: &str,
        before: chrono::DateTime<chrono::Utc>,
    ) -> usize {
        let cutoff = self.grid.slot_index_at_or_after(before);
        let done: Vec<u64> = self
            .chunks
            .iter()
            .copied()
            .take_while(|c| c.saturating_add(1).saturating_mul(CHUNK_SLOTS) <= cutoff)
            .collect();
        let Some(&last) = done.last() else { return 0 };
        let Some(end) = self
            .grid
            .slot_start(last.saturating_add(1).saturating_mul(CHUNK_SLOTS))
        else {
            return 0;
        };
        let removed: usize = self
            .grid
            .prune_before(end)
            .iter()
            .map(|(_, jobs)| jobs.len())
            .sum();
        for chunk in done {
            self.chunks.remove(&chunk);
            ctx.delete(GRID_STORE, chunk_key(tenant, chunk));
        }
        self.write_index(ctx, tenant);
        self.bump(ctx, tenant);
        removed
    }

    fn write_index(&self, ctx: &mut Context<'_>, tenant: &str) {
        let key = tenant_key(b'i', tenant);
        if self.chunks.is_empty() {
            ctx.delete(GRID_STORE, key);
        } else {
            let bytes: Vec<u8> = self.chunks.iter().flat_map(|c| c.to_be_bytes()).collect();
            ctx.put(GRID_STORE, key, bytes);
        }
    }

    fn bump(&mut self, ctx: &mut Context<'_>, tenant: &str) {
        self.writes += 1;
        self.version[..8].copy_from_slice(&self.nonce.to_be_bytes());
        self.version[8..].copy_from_slice(&self.writes.to_be_bytes());
        let mut meta = Vec::with_capacity(20);
        meta.extend_from_slice(&self.version);
        meta.extend_from_slice(&self.grid.config().slot_seconds.to_be_bytes());
        ctx.put(GRID_STORE, tenant_key(b'm', tenant), meta);
    }
}

#[cfg(test)]
mod tests;
