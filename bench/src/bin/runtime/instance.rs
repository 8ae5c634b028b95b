//! One benchmark run's names (app, topics) and a runtime instance on its own
//! thread, running the runtime's own `CountingProcessor` (one state read and
//! write, one output per input), or its Avro twin (`avro`), exactly as a
//! service would run a processor.

use std::sync::Arc;

use callstream_platform::KafkaSettings;
use callstream_runtime::testkit::{CountingProcessor, COUNTS_STORE};
use callstream_runtime::{CommitPolicy, Guarantee, ProcessorSpec, ValueGate};

use callstream_bench::kafka::unique_name;
use callstream_bench::processor::{instance_config, ProcessorError, RunningProcessor};

use crate::avro::AvroCountingProcessor;

/// Fresh names for one measurement: nothing an earlier run left matters.
#[derive(Debug, Clone)]
pub struct Names {
    pub app: String,
    pub input: String,
    pub output: String,
}

impl Names {
    pub fn fresh(label: &str) -> Self {
        let app = unique_name(&format!("bench-rt-{label}"));
        Self {
            input: format!("{app}-in"),
            output: format!("{app}-out"),
            app,
        }
    }

    pub fn spec(&self) -> ProcessorSpec {
        ProcessorSpec::new(&self.app, format!("{}-dlq", self.app)).input(&self.input)
    }

    /// The changelog of the counts store, whose keys are the distinct input keys.
    pub fn counts_changelog(&self) -> String {
        self.spec().changelog_topic(COUNTS_STORE)
    }

    /// Every topic a run with these names creates (inputs, outputs, dead
    /// letters, changelogs), for cleaning up.
    pub fn topics(&self) -> Vec<String> {
        let spec = self.spec();
        let mut topics = vec![
            self.input.clone(),
            self.output.clone(),
            spec.dead_letter_topic.clone(),
        ];
        topics.extend(spec.changelog_topics(&[COUNTS_STORE]));
        topics
    }
}

/// How an instance runs.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    pub guarantee: Guarantee,
    pub commit: CommitPolicy,
}

/// What the records hold, and so which processor reads them.
#[derive(Debug, Clone)]
pub enum Payload {
    /// Text (`<i>`, `t<µs>`), read by the runtime's `CountingProcessor`.
    Text,
    /// Avro `CallEvent`s in this process's framing, read by the
    /// [`AvroCountingProcessor`]; with the registry's `gate` under the
    /// Confluent framing, as `callstream process` runs a processor then.
    Avro { gate: Option<Arc<dyn ValueGate>> },
}

/// Starts instance `0` of `names.app` running the counting processor of
/// `payload` in `mode`, on its own thread.
pub fn start_instance(
    settings: &KafkaSettings,
    names: &Names,
    mode: Mode,
    payload: &Payload,
) -> Result<RunningProcessor, ProcessorError> {
    let mut config = instance_config(settings, &names.app);
    config.guarantee = mode.guarantee;
    config.commit = mode.commit;
    let output_topic = names.output.clone();
    match payload {
        Payload::Text => {
            let processor = CountingProcessor { output_topic };
            RunningProcessor::start("processor", processor, names.spec(), config)
        }
        Payload::Avro { gate } => {
            config.value_gate = gate.clone();
            let processor = AvroCountingProcessor { output_topic };
            RunningProcessor::start("processor", processor, names.spec(), config)
        }
    }
}
