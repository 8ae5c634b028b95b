use super::*;
use callstream_runtime::{Input, Output, Processor, ProcessorSpec, Record, TestDriver};
use chrono::DateTime;
use proptest::prelude::*;

proptest! {
    #[test]
    fn chunks_round_trip(slots in proptest::collection::btree_map(0u64..CHUNK_SLOTS, proptest::collection::vec(any::<u128>(), 1..4), 0..20)) {
        let chunk = 7;
        let slots: Vec<(u64, Vec<JobId>)> = slots
            .into_iter()
            .map(|(i, jobs)| (chunk * CHUNK_SLOTS + i, jobs.into_iter().map(Uuid::from_u128).collect()))
            .collect();
        let config = GridConfig { slot_seconds: 75, capacity_per_slot: 4 };
        // Job ids must be unique across slots to form a grid.
        let mut seen = std::collections::HashSet::new();
        prop_assume!(slots.iter().flat_map(|(_, j)| j).all(|j| seen.insert(*j)));
        // Neighbours in the chunks either side stay out of chunk 7's value.
        let neighbours = [
            (chunk * CHUNK_SLOTS - 1, vec![Uuid::from_u128(u128::MAX)]),
            ((chunk + 1) * CHUNK_SLOTS, vec![Uuid::from_u128(u128::MAX - 1)]),
        ];
        prop_assume!(neighbours.iter().flat_map(|(_, j)| j).all(|j| seen.insert(*j)));
        let all = slots.iter().cloned().chain(neighbours);
        let grid = SlotGrid::from_slots(config, all).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut back = Vec::new();
        prop_assert!(decode_chunk(&encode_chunk(&grid, chunk), &mut back).is_some());
        prop_assert_eq!(back, slots);
    }

    #[test]
    fn garbage_chunks_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
        let _ = decode_chunk(&bytes, &mut Vec::new());
    }
}

/// Books the job named by each record's value into the first free slot of
/// tenant `t` at or after slot `@n` (0 if not given), through cache `ours`
/// or (values starting with `other:`) through a second cache, as another
/// instance that owned the partition meanwhile would; emits the slot it
/// got. A value starting with `fail:` books through `ours` and then fails,
/// so the runtime drops the record's store writes as an aborted
/// transaction would, while the cache keeps the booking.
struct Booker {
    ours: GridCache,
    other: GridCache,
}

impl Processor for Booker {
    fn stores(&self) -> &'static [&'static str] {
        &[GRID_STORE]
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let text =
            String::from_utf8_lossy(record.value.as_deref().unwrap_or_default()).into_owned();
        let (who, rest) = text.split_once(':').unwrap_or(("ours", &text));
        let (job, from) = rest.split_once('@').unwrap_or((rest, "0"));
        let (job, from) = (job.parse::<u128>().unwrap(), from.parse::<i64>().unwrap());
        let cache = match who {
            "other" => &mut self.other,
            _ => &mut self.ours,
        };
        let config = GridConfig::default();
        let cached = cache.load(ctx, "t", config)?;
        let epoch = callstream_domain::slot_grid::GRID_EPOCH_UNIX_SECONDS;
        let slot = cached
            .grid
            .allocate(
                Uuid::from_u128(job),
                DateTime::from_timestamp(epoch + from * 75, 0).unwrap(),
                &Always,
                DateTime::from_timestamp(epoch + 86_400, 0).unwrap(),
            )
            .map_err(|e| ProcessError::Invalid(e.to_string()))?;
        cached.save(ctx, "t", &[slot.index]);
        if who == "fail" {
            return Err(ProcessError::Invalid("failed after booking".into()));
        }
        ctx.emit(Output::new("out", "t", slot.index.to_string()));
        Ok(())
    }
}

struct Always;

impl callstream_domain::Availability for Always {
    fn is_allowed(&self, _: DateTime<chrono::Utc>) -> bool {
        true
    }
    fn next_allowed(
        &self,
        at: DateTime<chrono::Utc>,
        _: DateTime<chrono::Utc>,
    ) -> Option<DateTime<chrono::Utc>> {
        Some(at)
    }
}

#[test]
fn a_cached_grid_is_rebuilt_when_the_store_moved_on_without_it() {
    let spec = ProcessorSpec::new("booker", "dlq").input("in");
    let booker = Booker {
        ours: GridCache::default(),
        other: GridCache::default(),
    };
    let mut driver = TestDriver::new(booker, spec, 1, 0);
    for value in ["1", "2", "other:3", "other:4", "5", "other:6", "7"] {
        driver.pipe(Input::new("in", "t", value));
    }
    let slots: Vec<String> = driver
        .records("out")
        .iter()
        .map(|p| String::from_utf8_lossy(p.value.as_deref().unwrap()).into_owned())
        .collect();
    // Had either cache trusted itself, two jobs would share a slot.
    assert_eq!(slots, ["0", "1", "2", "3", "4", "5", "6"]);
    assert!(driver.dead_letters().is_empty());
    // And a restart from the changelog gives the same grid.
    driver.processor().ours.clear();
    driver.restart();
    driver.pipe(Input::new("in", "t", "8"));
    assert_eq!(driver.records("out").len(), 8);
    let last = driver.records("out")[7].value.clone().unwrap();
    assert_eq!(last, b"7");
}

fn booker_driver() -> TestDriver<Booker> {
    let spec = ProcessorSpec::new("booker", "dlq").input("in");
    let booker = Booker {
        ours: GridCache::default(),
        other: GridCache::default(),
    };
    TestDriver::new(booker, spec, 1, 0)
}

fn slots_out(driver: &TestDriver<Booker>) -> Vec<String> {
    driver
        .records("out")
        .iter()
        .map(|p| String::from_utf8_lossy(p.value.as_deref().unwrap()).into_owned())
        .collect()
}

#[test]
fn a_booking_whose_writes_were_dropped_is_not_kept_by_the_cache() {
    let mut driver = booker_driver();
    for value in ["1", "fail:2", "3"] {
        driver.pipe(Input::new("in", "t", value));
    }
    // Job 2's slot was never stored: job 3 gets it.
    assert_eq!(slots_out(&driver), ["0", "1"]);
    assert_eq!(driver.dead_letters().len(), 1);
}

/// The same change to the same stored grid, made by two writers (an
/// instance whose transaction was dropped, and the instance that redid it
/// with a later clock, so another slot), leaves two different versions: the
/// first writer's cache must not pass for the store.
#[test]
fn the_same_change_by_two_writers_gives_two_versions() {
    let mut driver = booker_driver();
    for value in ["1", "fail:2@3", "other:2", "4"] {
        driver.pipe(Input::new("in", "t", value));
    }
    // Job 2 is stored in slot 1, so job 4 gets slot 2 (a stale cache,
    // with job 2 in slot 3, would hand out slot 1 twice).
    assert_eq!(slots_out(&driver), ["0", "1", "2"]);
}
