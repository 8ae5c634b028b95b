//! The processor API's contract beyond records and timers: stores are
//! declared by the processor and checked before anything runs, a use of an
//! undeclared store fails only its step (dead-lettered with the store's
//! name), the partition hooks are called, and outputs read back typed.

use callstream_platform::KafkaSettings;
use callstream_runtime::{
    header, Context, Input, Output, ProcessError, Processor, ProcessorSpec, Record, RuntimeConfig,
    RuntimeError, StoreError, TestDriver, TimeDomain, Timer,
};

const START: i64 = 1_700_000_000_000;

/// Writes the record's value to the store it names (`<store>:<value>`) and
/// echoes it; `timer:<store>` sets a timer that writes to `<store>` when it
/// fires. Declares `seen` only. Keeps the partition hooks it was called with.
#[derive(Default)]
struct Writer {
    stores: &'static [&'static str],
    hooks: Vec<String>,
}

impl Writer {
    fn new() -> Self {
        Self {
            stores: &["seen"],
            hooks: Vec::new(),
        }
    }
}

impl Processor for Writer {
    fn stores(&self) -> &'static [&'static str] {
        self.stores
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let key = record.key.clone().unwrap_or_default();
        let value = String::from_utf8_lossy(record.value.as_deref().unwrap_or_default());
        let (store, value) = value.split_once(':').unwrap_or(("seen", &value));
        if store == "timer" {
            ctx.set_timer(TimeDomain::WallClock, value, key, START + 1_000, []);
            return Ok(());
        }
        ctx.put(store, key.clone(), value.as_bytes().to_vec());
        ctx.emit(Output::new("out", key, value.to_string()));
        Ok(())
    }

    fn on_timer(&mut self, ctx: &mut Context<'_>, timer: &Timer) -> Result<(), ProcessError> {
        ctx.put(
            &timer.handle.name,
            timer.handle.key.clone(),
            b"timer".to_vec(),
        );
        Ok(())
    }

    fn on_assign(&mut self, partition: i32) {
        self.hooks.push(format!("assign {partition}"));
    }

    fn on_revoke(&mut self, partition: i32) {
        self.hooks.push(format!("revoke {partition}"));
    }
}

fn spec() -> ProcessorSpec {
    ProcessorSpec::new("writer", "dlq").input("in")
}

/// One partition, so every key shares a task.
fn driver() -> TestDriver<Writer> {
    TestDriver::new(Writer::new(), spec(), 1, START)
}

#[test]
fn a_use_of_an_undeclared_store_fails_only_its_step_naming_the_store() {
    let mut d = driver();
    d.pipe(Input::new("in", "a", "seen:1"));
    d.pipe(Input::new("in", "b", "typo:2"));
    d.pipe(Input::new("in", "c", "seen:3"));

    let dead = d.dead_letters();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].key.as_deref(), Some(&b"b"[..]));
    assert_eq!(
        dead[0].headers.get_str(header::DLQ_REASON),
        Some("state store \"typo\" is not declared by the processor (Processor::stores)")
    );
    // Its output went with it; the steps around it were untouched.
    assert_eq!(d.outputs::<Vec<u8>>("out"), [b"1".to_vec(), b"3".to_vec()]);
    assert_eq!(d.get("seen", b"c"), Some(&b"3"[..]));
    assert_eq!(d.get("typo", b"b"), None);
}

#[test]
fn a_timer_that_uses_an_undeclared_store_is_dead_lettered_and_removed() {
    let mut d = driver();
    d.pipe(Input::new("in", "a", "timer:typo"));
    d.advance_wall_clock_ms(1_000);
    let dead = d.dead_letters();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].headers.get_str(header::DLQ_KIND), Some("timer"));
    let reason = dead[0]
        .headers
        .get_str(header::DLQ_REASON)
        .unwrap_or_default();
    assert!(reason.contains("\"typo\""), "{reason}");
    assert_eq!(d.open_timers(), 0);
}

#[test]
fn declared_stores_are_checked_before_the_driver_starts() {
    let cases: [(&'static [&'static str], StoreError); 3] = [
        (&["seen", "seen"], StoreError::Duplicate("seen".into())),
        (&["__timers"], StoreError::Reserved("__timers".into())),
        (
            &["has space"],
            StoreError::IllegalName {
                store: "has space".into(),
                topic: "writer-has space-changelog".into(),
                reason: "a topic name holds only ASCII letters, digits, '.', '_' and '-'",
            },
        ),
    ];
    for (stores, expected) in cases {
        let writer = Writer {
            stores,
            ..Writer::default()
        };
        let refused = TestDriver::try_new(writer, spec(), 1, START).err();
        assert_eq!(refused, Some(expected), "{stores:?}");
    }
}

#[test]
#[should_panic(expected = "refusing to start writer: state store \"seen\" is declared twice")]
fn a_driver_with_bad_stores_fails_the_test_naming_the_store() {
    let writer = Writer {
        stores: &["seen", "seen"],
        ..Writer::default()
    };
    TestDriver::new(writer, spec(), 1, START);
}

#[test]
fn the_kafka_engine_refuses_bad_stores_before_it_touches_kafka() {
    let writer = Writer {
        stores: &["ok", "__timers"],
        ..Writer::default()
    };
    // Nothing listens there: a refusal that came from Kafka would take time
    // and say something else.
    let kafka = KafkaSettings::new("127.0.0.1:1", "writer-0");
    let config = RuntimeConfig::new(kafka, "writer", "0");
    let result = callstream_runtime::run(writer, spec(), config);
    let Err(RuntimeError::Stores { app, source }) = result else {
        panic!("expected a store refusal, got {result:?}");
    };
    assert_eq!(app, "writer");
    assert_eq!(source, StoreError::Reserved("__timers".into()));
}

#[test]
fn on_assign_is_called_when_a_task_first_appears_and_both_hooks_on_restart() {
    let mut d = TestDriver::new(Writer::new(), spec(), 4, START);
    let (a, b) = (
        callstream_runtime::partitioner::partition_for_key(b"a", 4),
        callstream_runtime::partitioner::partition_for_key(b"x", 4),
    );
    assert_ne!(a, b, "the keys must land on two partitions");
    d.pipe(Input::new("in", "a", "seen:1"));
    d.pipe(Input::new("in", "a", "seen:2"));
    d.pipe(Input::new("in", "x", "seen:3"));
    assert_eq!(
        d.processor().hooks,
        [format!("assign {a}"), format!("assign {b}")]
    );

    d.processor().hooks.clear();
    d.restart();
    let mut hooks = d.processor().hooks.clone();
    // Every partition is revoked before any is assigned again, each after its restore.
    let (revoked, assigned) = hooks.split_at_mut(2);
    revoked.sort();
    assigned.sort();
    let mut expected_revoked = [format!("revoke {a}"), format!("revoke {b}")];
    expected_revoked.sort();
    let mut expected_assigned = [format!("assign {a}"), format!("assign {b}")];
    expected_assigned.sort();
    assert_eq!(revoked, expected_revoked);
    assert_eq!(assigned, expected_assigned);
    assert_eq!(
        d.get("seen", b"a"),
        Some(&b"2"[..]),
        "assigned after restore"
    );
}

/// An output type that decodes from bytes, as the schemas crate's events do.
#[derive(Debug, PartialEq)]
struct Number(u32);

impl TryFrom<&[u8]> for Number {
    type Error = String;

    fn try_from(bytes: &[u8]) -> Result<Self, Self::Error> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        text.parse()
            .map(Number)
            .map_err(|_| format!("{text:?} is not a number"))
    }
}

#[test]
fn outputs_read_back_typed_and_records_raw() {
    let mut d = driver();
    d.pipe(Input::new("in", "a", "seen:7"));
    d.pipe(Input::new("in", "b", "seen:8"));
    assert_eq!(d.outputs::<Number>("out"), [Number(7), Number(8)]);
    let raw = d.records("out");
    assert_eq!(raw[1].key.as_deref(), Some(&b"b"[..]));
    assert!(d.outputs::<Number>("elsewhere").is_empty());
}

#[test]
#[should_panic(expected = "record 1 of out (partition 0) does not decode")]
fn a_typed_output_that_does_not_decode_fails_the_test_naming_the_record() {
    let mut d = driver();
    d.pipe(Input::new("in", "a", "seen:7"));
    d.pipe(Input::new("in", "b", "seen:seven"));
    d.outputs::<Number>("out");
}
