//! The CRM dispatcher as a process of its own, configured from the
//! environment (`CALLSTREAM_CRM_*`, `CALLSTREAM_TOPIC_*`,
//! `KAFKA_BOOTSTRAP_SERVERS`). `callstream process crm-dispatcher` is the
//! usual entry point; this one exists so the crash tests can SIGKILL a
//! dispatcher at any moment.
//!
//! Extra settings: `CALLSTREAM_APP_ID` (default `crm-dispatcher`),
//! `CALLSTREAM_INSTANCE_ID` (default `0`), and, to keep crash tests quick,
//! `CALLSTREAM_TRANSACTION_TIMEOUT_MS` and `CALLSTREAM_SESSION_TIMEOUT_MS`.
//! Stops cleanly (the open transaction commits) on SIGTERM or SIGINT.

use anyhow::{Context, Result};
use callstream_crm_dispatcher as crm;
use callstream_platform::{KafkaSettings, Settings};
use callstream_runtime::RuntimeConfig;

fn main() -> Result<()> {
    callstream_platform::telemetry::init_tracing("info");
    callstream_platform::clock::init_from_env()?;
    let config = crm::CrmDispatcherConfig::from_env().context("reading the configuration")?;
    let app_id = std::env::var("CALLSTREAM_APP_ID").unwrap_or_else(|_| crm::APP_ID.into());
    let instance = std::env::var("CALLSTREAM_INSTANCE_ID").unwrap_or_else(|_| "0".into());
    let spec = crm::spec(&config.topics, &app_id);
    let kafka = KafkaSettings::from_env_checked(format!("{app_id}-{instance}"))
        .context("Kafka client properties from the environment")?;
    let mut runtime = RuntimeConfig::new(kafka, &app_id, instance);
    runtime.replicate_like(&callstream_platform::Topics::from_env().context("topic settings")?);
    let settings = Settings::env();
    runtime.transaction_timeout = settings.millis(
        "CALLSTREAM_TRANSACTION_TIMEOUT_MS",
        runtime.transaction_timeout,
    )?;
    runtime.session_timeout =
        settings.millis("CALLSTREAM_SESSION_TIMEOUT_MS", runtime.session_timeout)?;
    runtime.effects = Some(crm::effect_runner(&config).context("building the CRM client")?);
    callstream_platform::shutdown::set_on_signal(runtime.shutdown.clone());
    tracing::info!(app = %app_id, crm = %config.base_url, "CRM dispatcher starting");
    callstream_runtime::run(crm::processor(&config), spec, runtime)
        .context("the CRM dispatcher stopped with an error")
}
