//! The three-broker SASL_SSL cluster of `cargo xtask up --cluster`, as tests that run on it
//! (in the cluster phase of `cargo xtask test`) reach it.

use std::path::PathBuf;

use anyhow::{Context, Result};
use callstream_platform::KafkaSettings;

/// Its brokers' client listeners.
pub const BOOTSTRAP: &str = "127.0.0.1:19094,127.0.0.1:19095,127.0.0.1:19096";

/// Its directory: `CALLSTREAM_CLUSTER_DIR`, default the checkout's `.stack/cluster`.
pub fn dir() -> PathBuf {
    std::env::var("CALLSTREAM_CLUSTER_DIR")
        .map_or_else(|_| crate::repo_root().join(".stack/cluster"), PathBuf::from)
}

/// A secret of the cluster: `secrets/<name>.password`, or `.database-url`, trimmed.
pub fn secret(file: &str) -> Result<String> {
    let path = dir().join("secrets").join(file);
    Ok(std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} (is the cluster up?)", path.display()))?
        .trim()
        .to_owned())
}

/// The CA that signed the brokers' (and its Postgres's) certificate.
pub fn ca() -> PathBuf {
    dir().join("tls/ca.pem")
}

/// Client settings for principal `user` with `password`, trusting `ca` when given.
pub fn settings_with(user: &str, password: &str, ca: Option<&str>) -> KafkaSettings {
    let mut settings = KafkaSettings::new(BOOTSTRAP, format!("{user}-test"));
    settings.properties = vec![
        ("security.protocol".into(), "SASL_SSL".into()),
        ("sasl.mechanism".into(), "SCRAM-SHA-512".into()),
        ("sasl.username".into(), user.into()),
        ("sasl.password".into(), password.into()),
    ];
    if let Some(ca) = ca {
        settings
            .properties
            .push(("ssl.ca.location".into(), ca.to_owned()));
    }
    settings
}

/// Client settings for principal `user`, as the cluster made it.
pub fn settings(user: &str) -> Result<KafkaSettings> {
    let password = secret(&format!("{user}.password"))?;
    Ok(settings_with(
        user,
        &password,
        Some(&ca().display().to_string()),
    ))
}

/// The Java clients' settings file of `user` (`--command-config`).
pub fn java_client_properties(user: &str) -> PathBuf {
    dir().join("clients").join(format!("{user}.properties"))
}
