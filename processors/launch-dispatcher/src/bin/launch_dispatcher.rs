//! The dispatcher as a process of its own, configured from the environment
//! (see `DispatcherConfig::from_env`), so the crash tests can SIGKILL it at
//! any moment. `callstream process launch-dispatcher` is the production
//! entry point; this one adds nothing but two runtime timeouts:
//!
//! Usage: launch_dispatcher [instance-id]   (default `0`)
//! - `CALLSTREAM_DISPATCH_APP_ID`: application id (default `launch-dispatcher`)
//! - `CALLSTREAM_RUNTIME_TRANSACTION_TIMEOUT_MS`, `CALLSTREAM_RUNTIME_SESSION_TIMEOUT_MS`
//!
//! Stops cleanly on SIGTERM or SIGINT (the open transaction commits).

use anyhow::{Context, Result};
use callstream_launch_dispatcher::{effect_runner, processor, spec, DispatcherConfig, APP_ID};
use callstream_platform::{KafkaSettings, Settings};
use callstream_runtime::RuntimeConfig;

fn main() -> Result<()> {
    callstream_platform::telemetry::init_tracing("warn,callstream_launch_dispatcher=info");
    callstream_platform::clock::init_from_env()?;
    let instance = std::env::args().nth(1).unwrap_or_else(|| "0".into());
    let app = std::env::var("CALLSTREAM_DISPATCH_APP_ID").unwrap_or_else(|_| APP_ID.into());
    let config = DispatcherConfig::from_env().context("reading the dispatcher configuration")?;
    let kafka = KafkaSettings::from_env_checked(format!("{app}-{instance}"))
        .context("Kafka client properties from the environment")?;
    let mut runtime = RuntimeConfig::new(kafka, &app, &instance);
    runtime.replicate_like(&callstream_platform::Topics::from_env().context("topic settings")?);
    let settings = Settings::env();
    runtime.transaction_timeout = settings.millis(
        "CALLSTREAM_RUNTIME_TRANSACTION_TIMEOUT_MS",
        runtime.transaction_timeout,
    )?;
    runtime.session_timeout = settings.millis(
        "CALLSTREAM_RUNTIME_SESSION_TIMEOUT_MS",
        runtime.session_timeout,
    )?;
    runtime.effects = Some(effect_runner(&config).context("building the provider client")?);
    callstream_platform::shutdown::set_on_signal(runtime.shutdown.clone());
    let spec = spec(&config.topics, &app);
    callstream_runtime::run(processor(&config), spec, runtime).context("launch dispatcher failed")
}
