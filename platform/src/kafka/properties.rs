//! librdkafka properties from the environment: `KAFKA_<PROPERTY>`, the property's name in
//! upper case with its dots as underscores (`KAFKA_SECURITY_PROTOCOL=SASL_SSL` sets
//! `security.protocol`), so any setting a managed cluster asks for (TLS, SASL, timeouts)
//! reaches every client without a release. A secret may come from a file instead:
//! `KAFKA_SASL_PASSWORD_FILE=/run/secrets/kafka` sets `sasl.password` to the file's text
//! (surrounding whitespace dropped).
//!
//! What exactly-once and durability rest on cannot be set this way (`acks`, idempotence,
//! `isolation.level`, offsets, transactional and group ids, the partitioner): a variable
//! naming one stops the service at start. The variables Apache Kafka's own scripts and
//! images read (`KAFKA_HEAP_OPTS`, `KAFKA_OPTS`, ...) are not client properties and are
//! left alone; `KAFKA_BOOTSTRAP_SERVERS` is read as the cluster's address.

/// Properties callstream fixes: changing them would break its guarantees.
pub const PROTECTED: &[&str] = &[
    "acks",
    "request.required.acks",
    "enable.idempotence",
    "isolation.level",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "transactional.id",
    "group.id",
    "partitioner",
    "client.id",
];

/// `KAFKA_*` variables that are not client properties: those of Apache Kafka's scripts and
/// container images, and the ones callstream reads itself.
const NOT_PROPERTIES: &[&str] = &[
    "BOOTSTRAP_SERVERS",
    "HOME",
    "OPTS",
    "HEAP_OPTS",
    "JVM_PERFORMANCE_OPTS",
    "GC_LOG_OPTS",
    "LOG4J_OPTS",
    "LOG_DIR",
    "JMX_OPTS",
    "JMX_PORT",
    "DEBUG",
    "DEBUG_SUSPEND_FLAG",
    "CLUSTER_ID",
];

/// A `KAFKA_*` variable that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertyError {
    #[error(
        "{variable} would set {property}, which callstream fixes (acks=all, idempotence and \
         read_committed are what its exactly-once and durability rest on); unset it"
    )]
    Protected { variable: String, property: String },
    #[error("{variable}: reading {path}: {problem}")]
    SecretFile {
        variable: String,
        path: String,
        problem: String,
    },
    #[error("{variable} is set but empty")]
    Empty { variable: String },
}

/// The client properties `vars` set, in name order.
pub fn from_vars(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<(String, String)>, PropertyError> {
    let mut out = Vec::new();
    for (variable, value) in vars {
        let Some(name) = variable.strip_prefix("KAFKA_") else {
            continue;
        };
        if name.is_empty() || NOT_PROPERTIES.contains(&name) {
            continue;
        }
        let (name, from_file) = match name.strip_suffix("_FILE") {
            Some(name) => (name, true),
            None => (name, false),
        };
        let property = name.to_ascii_lowercase().replace('_', ".");
        refuse_protected(&variable, &property)?;
        let value = if from_file {
            std::fs::read_to_string(value.trim())
                .map_err(|e| PropertyError::SecretFile {
                    variable: variable.clone(),
                    path: value.trim().to_owned(),
                    problem: e.to_string(),
                })?
                .trim()
                .to_owned()
        } else {
            value
        };
        refuse_empty(&variable, &value)?;
        out.push((property, value));
    }
    out.sort();
    Ok(out)
}

/// Checks a property that a config file sets (`origin` says where, e.g. `[kafka] acks in
/// gateway.toml`), by the rules of the variables: nothing protected, nothing empty.
pub fn check(origin: &str, property: &str, value: &str) -> Result<(), PropertyError> {
    refuse_protected(origin, property)?;
    refuse_empty(origin, value)
}

/// A property callstream fixes, named by `origin` (a variable, or a file's entry).
fn refuse_protected(origin: &str, property: &str) -> Result<(), PropertyError> {
    if PROTECTED.contains(&property) {
        return Err(PropertyError::Protected {
            variable: origin.to_owned(),
            property: property.to_owned(),
        });
    }
    Ok(())
}

/// A value that is empty (or only whitespace), named by `origin`.
fn refuse_empty(origin: &str, value: &str) -> Result<(), PropertyError> {
    if value.trim().is_empty() {
        return Err(PropertyError::Empty {
            variable: origin.to_owned(),
        });
    }
    Ok(())
}

/// Whether a property holds a secret, which is never logged or printed.
pub fn is_secret(property: &str) -> bool {
    ["password", "secret", "jaas", "key.pem", "token"]
        .iter()
        .any(|s| property.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn variables_name_properties_with_dots_as_underscores() {
        let set = from_vars(vars(&[
            ("KAFKA_SECURITY_PROTOCOL", "SASL_SSL"),
            ("KAFKA_SASL_MECHANISM", "SCRAM-SHA-512"),
            ("KAFKA_SSL_CA_LOCATION", "/etc/ca.pem"),
            ("KAFKA_BOOTSTRAP_SERVERS", "b:9092"),
            ("KAFKA_HEAP_OPTS", "-Xmx1g"),
            ("PATH", "/bin"),
        ]))
        .unwrap();
        assert_eq!(
            set,
            vec![
                ("sasl.mechanism".to_owned(), "SCRAM-SHA-512".to_owned()),
                ("security.protocol".to_owned(), "SASL_SSL".to_owned()),
                ("ssl.ca.location".to_owned(), "/etc/ca.pem".to_owned()),
            ]
        );
    }

    #[test]
    fn a_secret_comes_from_a_file() {
        let dir = std::env::temp_dir().join(format!("cs-props-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("password");
        std::fs::write(&file, "s3cret\n").unwrap();
        let set = from_vars(vars(&[(
            "KAFKA_SASL_PASSWORD_FILE",
            file.to_str().unwrap(),
        )]))
        .unwrap();
        assert_eq!(set, vec![("sasl.password".to_owned(), "s3cret".to_owned())]);
        let missing = from_vars(vars(&[("KAFKA_SASL_PASSWORD_FILE", "/nonexistent/pw")]));
        assert!(matches!(missing, Err(PropertyError::SecretFile { .. })));
        assert!(is_secret("sasl.password") && !is_secret("sasl.username"));
    }

    #[test]
    fn what_the_guarantees_rest_on_cannot_be_changed() {
        for (variable, property) in [
            ("KAFKA_ACKS", "acks"),
            ("KAFKA_ENABLE_IDEMPOTENCE", "enable.idempotence"),
            ("KAFKA_ISOLATION_LEVEL", "isolation.level"),
            ("KAFKA_TRANSACTIONAL_ID", "transactional.id"),
        ] {
            let err = from_vars(vars(&[(variable, "x")])).unwrap_err();
            assert_eq!(
                err,
                PropertyError::Protected {
                    variable: variable.to_owned(),
                    property: property.to_owned()
                }
            );
            assert!(err.to_string().contains("exactly-once"));
        }
        assert!(matches!(
            from_vars(vars(&[("KAFKA_SASL_USERNAME", " ")])),
            Err(PropertyError::Empty { .. })
        ));
    }
}
