//! The schema registry at a service's start: with `CALLSTREAM_SCHEMA_REGISTRY_URL` set, the
//! value schemas are registered (waiting for a registry that does not answer yet, stopping on
//! one that refuses a schema) and the process writes the Confluent wire format; processors
//! also fetch a newer writer's schema before they handle its first record.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use callstream_runtime::ValueGate;
use callstream_schema_registry::{install, RegistryClient, SchemaFetcher};

/// How long a starting service waits for a registry that does not answer.
const START_PATIENCE: Duration = Duration::from_secs(300);

/// The registry this process registered its schemas with, if any.
static INSTALLED: OnceLock<RegistryClient> = OnceLock::new();

/// Registers the schemas and switches this process to the Confluent framing when a registry
/// is configured. Without one: single-object encoding.
pub async fn install_from_env() -> Result<()> {
    let Some(client) = RegistryClient::from_env().context("the schema registry setting")? else {
        return Ok(());
    };
    let topics = callstream_platform::Topics::from_env().context("topic settings")?;
    install(&client, &topics, START_PATIENCE)
        .await
        .with_context(|| format!("registering the schemas at {}", client.url()))?;
    let _ = INSTALLED.set(client);
    Ok(())
}

/// The registry [`install_from_env`] registered with.
pub fn installed() -> Option<RegistryClient> {
    INSTALLED.get().cloned()
}

/// The gate for a processor's runtime.
pub fn value_gate(client: RegistryClient) -> Result<Arc<dyn ValueGate>> {
    let fetcher = SchemaFetcher::new(client).context("starting the schema fetcher")?;
    Ok(Arc::new(fetcher))
}
