//! The connection check services run at start, against the real broker: it passes for a
//! topic that exists, and names the cause when it does not: a missing topic, a broker that
//! does not answer, and TLS asked of a listener that does not speak it. (Credentials and
//! ACLs are checked on the three-broker SASL_SSL cluster.)

use std::time::Duration;

use anyhow::Result;
use callstream_e2e::{bootstrap_servers, cluster, create_topic, unique_name};
use callstream_platform::kafka::{check_connection, ConnectionError};
use callstream_platform::KafkaSettings;

const TIMEOUT: Duration = Duration::from_secs(10);

fn settings() -> KafkaSettings {
    KafkaSettings::new(bootstrap_servers(), "connection-check-test")
}

#[tokio::test]
async fn an_existing_topic_passes_and_a_missing_one_is_named() -> Result<()> {
    let topic = unique_name("check-present");
    create_topic(&topic, 1).await?;
    check_connection(&settings(), std::slice::from_ref(&topic), TIMEOUT)?;

    let missing = unique_name("check-missing");
    let err = check_connection(&settings(), &[topic, missing.clone()], TIMEOUT).unwrap_err();
    assert_eq!(err, ConnectionError::TopicMissing { topic: missing });
    assert!(err.to_string().contains("callstream topics create"));
    Ok(())
}

#[test]
fn a_broker_that_does_not_answer_is_named_unreachable() {
    let settings = KafkaSettings::new("127.0.0.1:1", "connection-check-test");
    let err = check_connection(&settings, &[], Duration::from_secs(3)).unwrap_err();
    assert!(
        matches!(&err, ConnectionError::Unreachable { servers, .. } if servers == "127.0.0.1:1"),
        "{err}"
    );
}

#[test]
fn tls_asked_of_a_plaintext_listener_is_named_a_tls_failure() {
    let mut settings = settings();
    settings.properties = vec![("security.protocol".into(), "SSL".into())];
    let err = check_connection(&settings, &[], Duration::from_secs(5)).unwrap_err();
    assert!(matches!(err, ConnectionError::Tls { .. }), "{err}");
    assert!(err.to_string().contains("KAFKA_SSL_CA_LOCATION"), "{err}");
}

/// On the three-broker SASL_SSL cluster (`cargo xtask up --cluster`; its directory in
/// `CALLSTREAM_CLUSTER_DIR`, default `.stack/cluster`): the right credentials pass for a
/// topic the principal may use; a wrong password is named an authentication failure, a
/// client without the cluster's CA a TLS failure, and a topic without an ACL is named as
/// not authorized. Run with `-- --ignored` once the cluster is up.
#[test]
#[ignore = "needs `cargo xtask up --cluster`"]
fn on_the_cluster_credentials_certificates_and_acls_are_named() -> Result<()> {
    let password = cluster::secret("gateway.password")?;
    let ca = cluster::ca().display().to_string();
    let gateway =
        |password: &str, ca: Option<&str>| cluster::settings_with("gateway", password, ca);
    let timeout = Duration::from_secs(10);
    check_connection(&gateway(&password, Some(&ca)), &[], timeout)?;

    let err = check_connection(&gateway("wrong", Some(&ca)), &[], timeout).unwrap_err();
    assert!(
        matches!(err, ConnectionError::Authentication { .. }),
        "{err}"
    );
    println!("{err}");
    let err = check_connection(&gateway(&password, None), &[], timeout).unwrap_err();
    assert!(matches!(err, ConnectionError::Tls { .. }), "{err}");
    println!("{err}");
    let err = check_connection(
        &gateway(&password, Some(&ca)),
        &["schedule-events".to_owned()],
        timeout,
    )
    .unwrap_err();
    assert_eq!(
        err,
        ConnectionError::TopicNotAuthorized {
            topic: "schedule-events".into()
        }
    );
    println!("{err}");
    Ok(())
}
