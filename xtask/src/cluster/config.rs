//! The cluster's `server.properties` (one per node) and its clients' settings.
//!
//! Three nodes, each broker and controller at once (KRaft combined mode), with a static quorum
//! of the three (`controller.quorum.voters`). Three listeners a node:
//! - `CLIENT` (127.0.0.1:19094..19096): SASL_SSL with SCRAM-SHA-512, for every client.
//! - `INTERNAL` (19194..19196): SSL with client certificates required, between brokers.
//! - `CONTROLLER` (19294..19296): SSL with client certificates required, the KRaft quorum and
//!   the brokers' registration. SCRAM cannot serve here (its credentials live in the metadata
//!   the controllers serve), and mutual TLS keeps one secret (the broker key) for both.
//!
//! Whoever holds the broker key is `User:CN=callstream-cluster-broker`, a super user.

use std::path::Path;

use super::tls::{TlsFiles, BROKER_CN};

pub const HOST: &str = "127.0.0.1";
pub const NODES: [u16; 3] = [1, 2, 3];

pub fn client_port(node: u16) -> u16 {
    19093 + node
}
pub fn internal_port(node: u16) -> u16 {
    19193 + node
}
pub fn controller_port(node: u16) -> u16 {
    19293 + node
}

/// `127.0.0.1:19094,127.0.0.1:19095,127.0.0.1:19096`.
pub fn bootstrap() -> String {
    NODES
        .iter()
        .map(|&n| format!("{HOST}:{}", client_port(n)))
        .collect::<Vec<_>>()
        .join(",")
}

fn voters() -> String {
    NODES
        .iter()
        .map(|&n| format!("{n}@{HOST}:{}", controller_port(n)))
        .collect::<Vec<_>>()
        .join(",")
}

pub const SCRAM_MECHANISM: &str = "SCRAM-SHA-512";
const SCRAM_LOGIN: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// The PEM texts a broker presents (inline: Kafka reads an unencrypted PKCS#8 key only from
/// `ssl.keystore.key`, a PEM key file needs a key password).
pub struct BrokerKeys {
    pub chain_pem: String,
    pub key_pem: String,
}

/// The settings of node `node`, in the order they are written.
pub fn settings(
    node: u16,
    data_dir: &Path,
    tls: &TlsFiles,
    keys: &BrokerKeys,
) -> Vec<(&'static str, String)> {
    let client = format!("CLIENT://{HOST}:{}", client_port(node));
    let internal = format!("INTERNAL://{HOST}:{}", internal_port(node));
    let controller = format!("CONTROLLER://{HOST}:{}", controller_port(node));
    vec![
        ("process.roles", "broker,controller".into()),
        ("node.id", node.to_string()),
        ("controller.quorum.voters", voters()),
        ("listeners", format!("{client},{internal},{controller}")),
        ("advertised.listeners", format!("{client},{internal}")),
        (
            "listener.security.protocol.map",
            "CLIENT:SASL_SSL,INTERNAL:SSL,CONTROLLER:SSL".into(),
        ),
        ("inter.broker.listener.name", "INTERNAL".into()),
        ("controller.listener.names", "CONTROLLER".into()),
        // SCRAM on the client listener; the users are created by `kafka-storage format`.
        ("sasl.enabled.mechanisms", SCRAM_MECHANISM.into()),
        (
            "listener.name.client.sasl.enabled.mechanisms",
            SCRAM_MECHANISM.into(),
        ),
        (
            "listener.name.client.scram-sha-512.sasl.jaas.config",
            format!("{SCRAM_LOGIN} required;"),
        ),
        // TLS everywhere, one broker certificate; client certificates on the internal ones.
        ("ssl.keystore.type", "PEM".into()),
        ("ssl.keystore.certificate.chain", keys.chain_pem.clone()),
        ("ssl.keystore.key", keys.key_pem.clone()),
        ("ssl.truststore.type", "PEM".into()),
        ("ssl.truststore.location", tls.ca.display().to_string()),
        ("ssl.client.auth", "none".into()),
        ("listener.name.internal.ssl.client.auth", "required".into()),
        (
            "listener.name.controller.ssl.client.auth",
            "required".into(),
        ),
        // Nothing without an ACL; see xtask/src/cluster/acls.rs.
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        ),
        ("super.users", format!("User:admin;User:CN={BROKER_CN}")),
        ("allow.everyone.if.no.acl.found", "false".into()),
        ("log.dirs", data_dir.display().to_string()),
        // A real cluster's durability: a write is acknowledged by two replicas of three, and
        // a replica that missed writes never becomes leader.
        ("default.replication.factor", "3".into()),
        ("min.insync.replicas", "2".into()),
        ("unclean.leader.election.enable", "false".into()),
        ("offsets.topic.replication.factor", "3".into()),
        ("transaction.state.log.replication.factor", "3".into()),
        ("transaction.state.log.min.isr", "2".into()),
        (
            "share.coordinator.state.topic.replication.factor",
            "3".into(),
        ),
        ("share.coordinator.state.topic.min.isr", "2".into()),
        ("group.initial.rebalance.delay.ms", "0".into()),
        ("auto.create.topics.enable", "false".into()),
        ("num.partitions", "3".into()),
    ]
}

/// A value as a `.properties` file needs it: one line, `\` and line ends escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('\r', "")
        .replace('\n', "\\n")
}

fn properties(header: &str, settings: &[(&str, String)]) -> String {
    let mut text = String::from(header);
    for (key, value) in settings {
        text.push_str(key);
        text.push('=');
        text.push_str(&escape(value));
        text.push('\n');
    }
    text
}

/// The text of node `node`'s server.properties (it holds the broker key: mode 0600).
pub fn server_properties(node: u16, data_dir: &Path, tls: &TlsFiles, keys: &BrokerKeys) -> String {
    properties(
        "# Generated by `cargo xtask up --cluster`; edits are overwritten. Source: xtask/src/cluster/config.rs\n",
        &settings(node, data_dir, tls, keys),
    )
}

/// A Java client's settings for `user` (`--command-config`, `--producer.config`).
pub fn client_settings(user: &str, password: &str, ca: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("bootstrap.servers", bootstrap()),
        ("security.protocol", "SASL_SSL".into()),
        ("sasl.mechanism", SCRAM_MECHANISM.into()),
        (
            "sasl.jaas.config",
            format!("{SCRAM_LOGIN} required username=\"{user}\" password=\"{password}\";"),
        ),
        ("ssl.truststore.type", "PEM".into()),
        ("ssl.truststore.location", ca.display().to_string()),
    ]
}

pub fn client_properties(user: &str, password: &str, ca: &Path) -> String {
    properties(
        &format!(
            "# Kafka (Java) client settings of `{user}` on the xtask cluster. Generated by \
             `cargo xtask up --cluster`.\n"
        ),
        &client_settings(user, password, ca),
    )
}

/// The same for librdkafka (rdkafka's `ClientConfig`), with the password shown as where it
/// is kept, never itself.
pub fn librdkafka_settings(user: &str, password_file: &str, ca: &str) -> String {
    format!(
        "bootstrap.servers={} security.protocol=SASL_SSL sasl.mechanism={SCRAM_MECHANISM} \
         sasl.username={user} sasl.password=<{password_file}> ssl.ca.location={ca}",
        bootstrap()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(text: &str) -> HashMap<String, String> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let (k, v) = l.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    fn node_props(node: u16) -> (String, HashMap<String, String>) {
        let tls = TlsFiles::in_dir(Path::new("/s/cluster/tls"));
        let keys = BrokerKeys {
            chain_pem: "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n".into(),
            key_pem: "-----BEGIN PRIVATE KEY-----\nBBB\n-----END PRIVATE KEY-----\n".into(),
        };
        let text = server_properties(node, Path::new("/s/cluster/node-2/data"), &tls, &keys);
        let props = parse(&text);
        (text, props)
    }

    #[test]
    fn a_node_has_the_settings_of_a_real_cluster() {
        let (text, props) = node_props(2);
        let expected = [
            ("node.id", "2"),
            (
                "controller.quorum.voters",
                "1@127.0.0.1:19294,2@127.0.0.1:19295,3@127.0.0.1:19296",
            ),
            (
                "listeners",
                "CLIENT://127.0.0.1:19095,INTERNAL://127.0.0.1:19195,CONTROLLER://127.0.0.1:19295",
            ),
            (
                "listener.security.protocol.map",
                "CLIENT:SASL_SSL,INTERNAL:SSL,CONTROLLER:SSL",
            ),
            ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
            (
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            ),
            (
                "super.users",
                "User:admin;User:CN=callstream-cluster-broker",
            ),
            ("allow.everyone.if.no.acl.found", "false"),
            ("default.replication.factor", "3"),
            ("min.insync.replicas", "2"),
            ("unclean.leader.election.enable", "false"),
            ("offsets.topic.replication.factor", "3"),
            ("transaction.state.log.replication.factor", "3"),
            ("transaction.state.log.min.isr", "2"),
            ("ssl.truststore.location", "/s/cluster/tls/ca.pem"),
        ];
        for (key, value) in expected {
            assert_eq!(props.get(key).map(String::as_str), Some(value), "{key}");
        }
        let lines = text.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(props.len(), lines, "a key written twice");
    }

    #[test]
    fn pem_values_stay_on_one_line_with_escaped_line_ends() {
        let (_, props) = node_props(1);
        assert_eq!(
            props["ssl.keystore.key"],
            "-----BEGIN PRIVATE KEY-----\\nBBB\\n-----END PRIVATE KEY-----\\n"
        );
    }

    #[test]
    fn client_settings_name_the_user_and_the_ca() {
        let text = client_properties("gateway", "pw", Path::new("/ca.pem"));
        let props = parse(&text);
        assert_eq!(props["security.protocol"], "SASL_SSL");
        assert_eq!(props["sasl.mechanism"], "SCRAM-SHA-512");
        assert_eq!(
            props["bootstrap.servers"],
            "127.0.0.1:19094,127.0.0.1:19095,127.0.0.1:19096"
        );
        assert!(props["sasl.jaas.config"].contains("username=\"gateway\" password=\"pw\";"));
        let rd = librdkafka_settings("gateway", "p/gateway.password", "ca.pem");
        assert!(rd.contains("sasl.username=gateway sasl.password=<p/gateway.password>"));
    }
}
