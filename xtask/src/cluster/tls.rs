//! The cluster's certificates, made at its first start with rcgen (pure Rust: no openssl or
//! keytool to install or to drive): a CA, and one broker certificate signed by it for
//! `IP:127.0.0.1` and `DNS:localhost`, which every broker presents on all its listeners and,
//! as a client, to the other brokers' internal and controller listeners (mutual TLS there).
//!
//! Files under `.stack/cluster/tls/`: `ca.pem` (what clients trust), `broker.pem` (the
//! broker certificate followed by the CA's) and `broker.key` (PKCS#8, mode 0600). The CA's
//! key is not kept: nothing else is ever signed with it; `reset --cluster` makes new ones.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};

/// The subject of the broker certificate; its principal (`User:CN=...`) on the mutual-TLS
/// listeners is a super user.
pub const BROKER_CN: &str = "callstream-cluster-broker";
const CA_CN: &str = "callstream dev cluster CA";
const VALID_YEARS: i32 = 10;

/// The PEM files of the cluster.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub ca: PathBuf,
    pub broker_chain: PathBuf,
    pub broker_key: PathBuf,
}

impl TlsFiles {
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            ca: dir.join("ca.pem"),
            broker_chain: dir.join("broker.pem"),
            broker_key: dir.join("broker.key"),
        }
    }

    pub fn exist(&self) -> bool {
        [&self.ca, &self.broker_chain, &self.broker_key]
            .iter()
            .all(|p| p.is_file())
    }
}

/// The PEM texts of a fresh CA and broker certificate.
pub struct Generated {
    pub ca_pem: String,
    pub broker_chain_pem: String,
    pub broker_key_pem: String,
}

fn this_year() -> i32 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Close enough for a validity period that starts a year back.
    1970 + i32::try_from(secs / 31_556_952).unwrap_or(0)
}

fn name(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

pub fn generate() -> Result<Generated> {
    let year = this_year();
    let (not_before, not_after) = (
        date_time_ymd(year - 1, 1, 1),
        date_time_ymd(year + VALID_YEARS, 1, 1),
    );

    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name = name(CA_CN);
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.not_before = not_before;
    ca.not_after = not_after;
    let ca_key = KeyPair::generate().context("generating the CA key")?;
    let ca_cert = ca.self_signed(&ca_key).context("signing the CA")?;
    let issuer = Issuer::new(ca, ca_key);

    let mut broker = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()])?;
    broker.distinguished_name = name(BROKER_CN);
    broker.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    // Server on every listener, client towards the other brokers and the controllers.
    broker.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    broker.use_authority_key_identifier_extension = true;
    broker.not_before = not_before;
    broker.not_after = not_after;
    let broker_key = KeyPair::generate().context("generating the broker key")?;
    let broker_cert = broker
        .signed_by(&broker_key, &issuer)
        .context("signing the broker certificate")?;

    Ok(Generated {
        ca_pem: ca_cert.pem(),
        broker_chain_pem: format!("{}{}", broker_cert.pem(), ca_cert.pem()),
        broker_key_pem: broker_key.serialize_pem(),
    })
}

/// Makes the files unless all three exist. Returns whether it made them.
pub fn ensure(files: &TlsFiles) -> Result<bool> {
    if files.exist() {
        return Ok(false);
    }
    let generated = generate()?;
    if let Some(dir) = files.ca.parent() {
        fs::create_dir_all(dir)?;
    }
    super::write_private(&files.broker_key, &generated.broker_key_pem)?;
    fs::write(&files.broker_chain, &generated.broker_chain_pem)?;
    fs::write(&files.ca, &generated.ca_pem)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_a_ca_and_a_broker_chain_with_a_pkcs8_key() {
        let g = generate().unwrap();
        assert_eq!(g.ca_pem.matches("BEGIN CERTIFICATE").count(), 1);
        assert_eq!(g.broker_chain_pem.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(g.broker_chain_pem.ends_with(&g.ca_pem));
        // Kafka's PEM key store reads unencrypted PKCS#8 only.
        assert!(g.broker_key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!((2024..2200).contains(&this_year()));
    }
}
