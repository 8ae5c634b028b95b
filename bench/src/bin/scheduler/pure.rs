//! The pure allocator: [`SlotGrid`] with the default grid settings (75 s
//! slots, one launch each), under a real [`CallingWindow`] (weekdays
//! 08:00–21:00 in America/Chicago, the widest federal hours allow), the
//! way the scheduler uses it, with no Kafka and no state store.
//!
//! Three numbers:
//! - spread (the headline): `booked` jobs with earliest times scattered
//!   over a year, then rounds that allocate one more job at another
//!   scattered time and cancel it, so the grid keeps its size;
//! - `place_job`: the same rounds through the scheduler's own placement
//!   (window check, move to the next opening, reasons, then the allocator),
//!   with the scheduler's 28-day horizon;
//! - frontier: `booked` jobs back to back from one instant, then requests
//!   at that instant: each one crosses every booked day and closed night to
//!   the end (far deeper than the scheduler's horizon allows; a worst case).
//!
//! The spread and `place_job` rounds run twice: rules off (no state known, the
//! federal floor and the window) and rules on (a Florida lead: Florida's hours
//! and its 3-in-24-hours cap over two calls already placed, intersected with
//! the window; `place_job` builds the lead's rules from the wire fields on
//! every round, as the scheduler does per request).

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use callstream_domain::calling_rules::{AllOf, TenantRules};
use callstream_domain::calling_window::{CallingWindow, CampaignWindow, Days};
use callstream_domain::slot_grid::{GridConfig, JobId, SlotGrid};
use callstream_domain::Availability;
use callstream_kit::calling_rules::LeadRules;
use callstream_scheduler::placement::{place_job, Outcome, Timing};
use chrono::{DateTime, NaiveTime, TimeDelta, TimeZone, Utc};
use chrono_tz::America::Chicago;
use tracing::info;
use uuid::Uuid;

#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub booked: u64,
    pub rounds: u64,
    pub frontier_rounds: u64,
}

#[derive(Debug, Clone, Copy)]
pub struct Pure {
    pub spread_per_s: f64,
    pub place_job_per_s: f64,
    pub frontier_per_s: f64,
    pub spread_rules_on_per_s: f64,
    pub place_job_rules_on_per_s: f64,
}

/// Scattered earliest times span this many days; the search may run past
/// them to the horizon.
const SPREAD_DAYS: u64 = 365;
const HORIZON_DAYS: i64 = 400;
/// The scheduler's default horizon and move buffer.
const PLACE_HORIZON: Duration = Duration::from_secs(28 * 86_400);
const MOVE_BUFFER: Duration = Duration::from_secs(15 * 60);

fn job(n: u64) -> JobId {
    Uuid::from_u64_pair(0xb0b, n)
}

/// Monday 2025-03-10 00:00 Chicago: a fixed start keeps runs comparable.
fn start() -> Result<DateTime<Utc>> {
    Chicago
        .with_ymd_and_hms(2025, 3, 10, 0, 0, 0)
        .single()
        .map(|t| t.with_timezone(&Utc))
        .context("the start instant is ambiguous")
}

/// A deterministic scatter of `n` over the spread, to the second.
fn spread(start: DateTime<Utc>, n: u64) -> DateTime<Utc> {
    let seconds = n.wrapping_mul(2_654_435_761) % (SPREAD_DAYS * 86_400);
    start + TimeDelta::seconds(seconds as i64)
}

fn window() -> Result<CallingWindow> {
    let time = |h| NaiveTime::from_hms_opt(h, 0, 0).context("a whole hour");
    Ok(CampaignWindow::daily(Days::WEEKDAYS, time(8)?, time(21)?)?.in_zones(vec![Chicago])?)
}

fn per_s(count: u64, since: Instant) -> f64 {
    count as f64 / since.elapsed().as_secs_f64()
}

pub fn measure(sizes: Sizes) -> Result<Pure> {
    let start = start()?;
    let horizon = start + TimeDelta::days(HORIZON_DAYS);
    let window = window()?;

    let began = Instant::now();
    let mut grid = SlotGrid::new(GridConfig::default())?;
    for n in 0..sizes.booked {
        grid.allocate(job(n), spread(start, n), &window, horizon)
            .map_err(|refusal| anyhow::anyhow!("booking job {n} of the grid: {refusal}"))?;
    }
    info!(
        booked = grid.len(),
        seconds = began.elapsed().as_secs_f64(),
        "grid booked; timing the spread case"
    );

    let began = Instant::now();
    for n in 0..sizes.rounds {
        let id = job(1 << 40 | n);
        grid.allocate(id, spread(start, n * 7 + 3), &window, horizon)
            .map_err(|refusal| anyhow::anyhow!("spread round {n}: {refusal}"))?;
        grid.cancel(id);
    }
    let spread_per_s = per_s(sizes.rounds, began);
    ensure_size(&grid, sizes.booked)?;

    let began = Instant::now();
    for n in 0..sizes.rounds {
        let id = job(2 << 40 | n);
        let earliest = spread(start, n * 11 + 5);
        let timing = Timing {
            earliest,
            // The clock is before every request: nothing is "already past".
            now: start,
            horizon: PLACE_HORIZON,
            move_buffer: MOVE_BUFFER,
        };
        match place_job(&mut grid, id, &window, None, timing) {
            Outcome::Allocated { .. } => {}
            other => bail!("place_job round {n} did not allocate: {other:?}"),
        }
        grid.cancel(id);
    }
    let place_job_per_s = per_s(sizes.rounds, began);
    ensure_size(&grid, sizes.booked)?;

    // Rules on: a Florida lead with two calls placed the day before the spread.
    let placed = [start - TimeDelta::hours(20), start - TimeDelta::hours(18)];
    let states = ["FL".to_owned()];
    let statutory = TenantRules::none();
    let rules = LeadRules::from_wire(&states, &[Chicago], &placed, &statutory)
        .context("Florida's rules")?;
    let began = Instant::now();
    for n in 0..sizes.rounds {
        let id = job(3 << 40 | n);
        let parts: [&dyn Availability; 2] = [&window, &rules];
        grid.allocate(id, spread(start, n * 7 + 3), &AllOf(&parts), horizon)
            .map_err(|refusal| anyhow::anyhow!("spread round {n} with rules: {refusal}"))?;
        grid.cancel(id);
    }
    let spread_rules_on_per_s = per_s(sizes.rounds, began);
    ensure_size(&grid, sizes.booked)?;

    let began = Instant::now();
    for n in 0..sizes.rounds {
        let id = job(4 << 40 | n);
        let timing = Timing {
            earliest: spread(start, n * 11 + 5),
            now: start,
            horizon: PLACE_HORIZON,
            move_buffer: MOVE_BUFFER,
        };
        let rules = LeadRules::from_wire(&states, &[Chicago], &placed, &statutory);
        match place_job(&mut grid, id, &window, rules.as_ref(), timing) {
            Outcome::Allocated { .. } => {}
            other => bail!("place_job round {n} with rules did not allocate: {other:?}"),
        }
        grid.cancel(id);
    }
    let place_job_rules_on_per_s = per_s(sizes.rounds, began);
    ensure_size(&grid, sizes.booked)?;

    let frontier_per_s = frontier(sizes, start, &window)?;
    Ok(Pure {
        spread_per_s,
        place_job_per_s,
        frontier_per_s,
        spread_rules_on_per_s,
        place_job_rules_on_per_s,
    })
}

/// The worst case: every request starts its search at the first slot of
/// a grid booked solid from there.
fn frontier(sizes: Sizes, start: DateTime<Utc>, window: &CallingWindow) -> Result<f64> {
    // Room for the booked stretch plus the burst, with a year to spare.
    let days = (sizes.booked + sizes.frontier_rounds) / (13 * 48 * 5 / 7) + 365;
    let horizon = start + TimeDelta::days(i64::try_from(days).unwrap_or(i64::MAX / 86_400));
    let mut grid = SlotGrid::new(GridConfig::default())?;
    // Booking from the previous job's slot gives the same grid as booking
    // every job from `start`, without paying the worst case while building.
    let mut from = start;
    for n in 0..sizes.booked {
        let slot = grid
            .allocate(job(3 << 40 | n), from, window, horizon)
            .map_err(|refusal| anyhow::anyhow!("booking frontier job {n}: {refusal}"))?;
        from = slot.start;
    }
    info!(
        booked = grid.len(),
        "frontier grid booked; timing the worst case"
    );
    let began = Instant::now();
    for n in 0..sizes.frontier_rounds {
        grid.allocate(job(4 << 40 | n), start, window, horizon)
            .map_err(|refusal| anyhow::anyhow!("frontier round {n}: {refusal}"))?;
    }
    Ok(per_s(sizes.frontier_rounds, began))
}

fn ensure_size(grid: &SlotGrid, booked: u64) -> Result<()> {
    if grid.len() as u64 != booked {
        bail!(
            "the grid holds {} jobs after the rounds, not {booked}",
            grid.len()
        );
    }
    Ok(())
}
