//! The runtime's counting processor as its own OS process, so the
//! exactly-once tests can kill it with SIGKILL at any moment.
//!
//! Usage: counter_processor <app> <instance> <input> <output> <dead-letters>
//! Stops cleanly on SIGTERM or SIGINT.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use callstream_platform::KafkaSettings;
use callstream_runtime::testkit::CountingProcessor;
use callstream_runtime::{ProcessorSpec, RuntimeConfig};

fn main() -> Result<()> {
    callstream_platform::telemetry::init_tracing("warn,callstream_runtime=info");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [app, instance, input, output, dead_letters] = args.as_slice() else {
        bail!("usage: counter_processor <app> <instance> <input> <output> <dead-letters>");
    };
    let spec = ProcessorSpec::new(app, dead_letters).input(input);
    let mut config = RuntimeConfig::new(
        KafkaSettings::from_env(format!("{app}-{instance}")),
        app,
        instance,
    );
    // Short timeouts keep the crash tests quick: a killed instance's open
    // transaction and group membership expire within seconds.
    config.transaction_timeout = Duration::from_secs(10);
    config.session_timeout = Duration::from_secs(6);
    callstream_platform::shutdown::set_on_signal(config.shutdown.clone());
    let processor = CountingProcessor {
        output_topic: output.clone(),
    };
    callstream_runtime::run(processor, spec, config).context("counter processor failed")
}
