//! Schema evolution, checked by the schema registry itself (beside `callstream-schemas`'
//! own `can_read` tests): for every event type, its released versions (`schemas/history/`)
//! are registered in order under a scratch subject with BACKWARD_TRANSITIVE compatibility,
//! then the working tree's schema is put to the registry's compatibility check. A change a
//! reader of any released version could not take fails here with the registry's reasons,
//! before it ships; the same check would refuse it at a writer's start in production.

use anyhow::{Context, Result};
use callstream_e2e::stack_registry_url;
use callstream_schema_registry::RegistryClient;
use callstream_schemas::EventKind;
use uuid::Uuid;

#[tokio::test]
async fn every_schema_is_compatible_with_its_released_versions_by_the_registry() -> Result<()> {
    let url = stack_registry_url();
    let registry = RegistryClient::new(&url)?;
    let http = reqwest::Client::new();
    let run = Uuid::new_v4().simple().to_string();
    let mut checked = Vec::new();
    let mut refused = Vec::new();
    for &kind in EventKind::ALL {
        let subject = format!("evolution-{run}-{}-value", kind.file_stem());
        // Stricter than the stack's global BACKWARD: every released version, not only the last.
        let answer = http
            .put(format!("{url}/config/{subject}"))
            .header("Content-Type", "application/vnd.schemaregistry.v1+json")
            .body(r#"{"compatibility":"BACKWARD_TRANSITIVE"}"#)
            .send()
            .await?;
        anyhow::ensure!(
            answer.status().is_success(),
            "setting {subject}'s compatibility: {}",
            answer.text().await?
        );
        let released: Vec<_> = kind.frozen_versions().collect();
        for version in &released {
            registry
                .register(&subject, version.json)
                .await
                .with_context(|| {
                    format!(
                        "released version v{} of {} no longer registers after the ones before it",
                        version.version.unwrap_or_default(),
                        kind.file_stem()
                    )
                })?;
        }
        match registry
            .check_compatibility(&subject, kind.schema_json())
            .await?
        {
            Ok(()) => checked.push(format!(
                "{} ({} released)",
                kind.file_stem(),
                released.len()
            )),
            Err(reasons) => refused.push(format!(
                "schemas/{}.avsc: {}",
                kind.file_stem(),
                reasons.join("; ")
            )),
        }
    }
    assert!(
        refused.is_empty(),
        "the registry refuses these schemas as incompatible with a released version:\n{}",
        refused.join("\n")
    );
    println!(
        "the registry takes every schema after its released versions: {}",
        checked.join(", ")
    );
    Ok(())
}

/// The check above would catch a breaking change: a required field without a default added
/// to the newest released version is refused.
#[tokio::test]
async fn the_registry_refuses_a_breaking_change() -> Result<()> {
    let url = stack_registry_url();
    let registry = RegistryClient::new(&url)?;
    let kind = EventKind::CallLaunch;
    let subject = format!("evolution-{}-breaking-value", Uuid::new_v4().simple());
    registry.register(&subject, kind.schema_json()).await?;
    let mut breaking: serde_json::Value = serde_json::from_str(kind.schema_json())?;
    breaking["fields"]
        .as_array_mut()
        .context("fields")?
        .push(serde_json::json!({"name": "required_now", "type": "string"}));
    let answer = registry
        .check_compatibility(&subject, &breaking.to_string())
        .await?;
    assert!(
        answer.is_err(),
        "a required field without a default must be refused"
    );
    Ok(())
}
