//! Tests of config resolution: secrets from the environment and files,
//! redaction, and the mistakes that must stop start-up.

use std::collections::HashMap;

use super::*;

struct FakeEnv(HashMap<&'static str, &'static str>);

impl Lookup for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|v| v.to_string())
    }
}

fn env() -> FakeEnv {
    FakeEnv(HashMap::from([
        ("TWILIO_TOKEN", "tok-123-twilio-auth"),
        ("TWILIO_TOKEN_OLD", "tok-old-twilio-auth"),
        ("WHSEC", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        ("LAUNCH_TOKEN", "launch-secret-acme"),
        ("EMPTY", "  "),
        ("PLACEHOLDER", "change-me"),
        ("WHSEC_PLACEHOLDER", "whsec_change-me"),
        ("AC_PLACEHOLDER", "ACchange-me"),
        ("FIFTEEN_BYTES", "fifteen-bytes!!"),
        ("SIXTEEN_BYTES", "sixteen-bytes!!!"),
        // Keys of 15 and 16 bytes.
        ("WHSEC_FIFTEEN", "whsec_ZmlmdGVlbi1ieXRlcyEh"),
        ("WHSEC_SIXTEEN", "whsec_c2l4dGVlbi1ieXRlcyEhIQ=="),
    ]))
}

fn resolve(text: &str) -> Result<GatewayConfig, ConfigError> {
    let file: FileConfig = toml::from_str(text).map_err(|source| ConfigError::Parse {
        path: "test.toml".into(),
        source,
    })?;
    file.resolve(
        KafkaSettings::new("127.0.0.1:9092", "t"),
        Topics::default(),
        &env(),
    )
}

const GOOD: &str = r#"
listen = "127.0.0.1:9000"
public_base_url = "https://gw.example.com/"
produce_timeout_ms = 2500
produce_linger_ms = 8

[[integrations]]
id = "acme-voice"
tenant = "acme"
provider = "twilio"
secrets = [{ env = "TWILIO_TOKEN" }, { env = "TWILIO_TOKEN_OLD" }]
rate_per_second = 50

[[integrations]]
id = "acme-ai"
tenant = "acme"
provider = "json"
secrets = [{ env = "WHSEC" }]

[[tenants]]
tenant = "acme"
tokens = [{ env = "LAUNCH_TOKEN" }, { sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }]
"#;

#[test]
fn a_full_file_resolves() {
    let config = resolve(GOOD).unwrap();
    assert_eq!(config.listen.to_string(), "127.0.0.1:9000");
    assert_eq!(config.public_base_url, "https://gw.example.com");
    assert_eq!(config.produce_timeout, Duration::from_millis(2500));
    assert_eq!(config.produce_linger, Duration::from_millis(8));
    assert_eq!(config.max_body_bytes, 64 * 1024);
    let twilio = &config.integrations[0];
    assert_eq!(
        (twilio.provider, twilio.tenant_id.as_str()),
        (ProviderKind::Twilio, "acme")
    );
    assert_eq!(twilio.secrets[0].expose(), b"tok-123-twilio-auth");
    assert_eq!(twilio.rate_limit.per_second.get(), 50);
    assert_eq!(twilio.rate_limit.burst.get(), 100);
    // whsec_ secrets are decoded to their key bytes at load.
    assert_eq!(config.integrations[1].secrets[0].expose().len(), 24);
    let tenant = &config.tenants[0];
    assert_eq!(tenant.token_hashes[0], hash_token(b"launch-secret-acme"));
    assert_eq!(tenant.token_hashes[1], hash_token(b"test"));
}

#[test]
fn debug_output_never_shows_secrets() {
    let shown = format!("{:?}", resolve(GOOD).unwrap());
    for secret in ["tok-123", "tok-old", "MfKQ9r8G", "launch-secret"] {
        assert!(!shown.contains(secret), "{secret} leaked");
    }
    assert!(shown.contains("acme-voice"));
}

#[test]
fn secrets_can_come_from_files() {
    let dir = std::env::temp_dir().join(format!("gw-config-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("token");
    std::fs::write(&path, "from-file-0123456789\n").unwrap();
    let text = format!(
        "[[integrations]]\nid = \"i\"\ntenant = \"t\"\nprovider = \"twilio\"\nsecrets = [{{ file = {:?} }}]\n",
        path.display().to_string()
    );
    let config = resolve(&text).unwrap();
    assert_eq!(
        config.integrations[0].secrets[0].expose(),
        b"from-file-0123456789"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn mistakes_stop_start_up() {
    let integration = |provider: &str, secrets: &str| {
        format!("[[integrations]]\nid = \"i\"\ntenant = \"t\"\nprovider = \"{provider}\"\nsecrets = {secrets}\n")
    };
    let cases = [
        (
            "unknown provider",
            integration("vonage", "[{ env = \"TWILIO_TOKEN\" }]"),
        ),
        (
            "unset variable",
            integration("twilio", "[{ env = \"NOPE\" }]"),
        ),
        (
            "empty variable",
            integration("twilio", "[{ env = \"EMPTY\" }]"),
        ),
        ("no secrets", integration("twilio", "[]")),
        (
            "json secret without whsec_",
            integration("json", "[{ env = \"TWILIO_TOKEN\" }]"),
        ),
        (
            "sha256 for a webhook secret",
            integration("twilio", "[{ sha256 = \"00\" }]"),
        ),
        (
            "missing file",
            integration("twilio", "[{ file = \"/nonexistent/x\" }]"),
        ),
        (
            "inline secret",
            integration("twilio", "[{ value = \"tok\" }]"),
        ),
        (
            "duplicate id",
            format!(
                "{}{}",
                integration("twilio", "[{ env = \"TWILIO_TOKEN\" }]"),
                integration("twilio", "[{ env = \"TWILIO_TOKEN\" }]")
            ),
        ),
        ("bad listen", "listen = \"nowhere\"".to_string()),
        (
            "bad base url",
            "public_base_url = \"gw.example.com\"".to_string(),
        ),
        ("unknown key", "colour = \"blue\"".to_string()),
        (
            "short sha256",
            "[[tenants]]\ntenant = \"t\"\ntokens = [{ sha256 = \"abcd\" }]".to_string(),
        ),
        (
            "tenant without tokens",
            "[[tenants]]\ntenant = \"t\"\ntokens = []".to_string(),
        ),
    ];
    for (name, text) in cases {
        let err = resolve(&text).expect_err(name);
        let shown = err.to_string();
        assert!(!shown.contains("tok-123"), "{name}: {shown}");
    }
}

#[test]
fn placeholder_and_short_secrets_stop_start_up_naming_their_variable() {
    let integration = |provider: &str, var: &str| {
        format!("[[integrations]]\nid = \"i\"\ntenant = \"t\"\nprovider = \"{provider}\"\nsecrets = [{{ env = \"{var}\" }}]\n")
    };
    let tenant =
        |var: &str| format!("[[tenants]]\ntenant = \"t\"\ntokens = [{{ env = \"{var}\" }}]\n");
    let refused = [
        (
            "launch token placeholder",
            tenant("PLACEHOLDER"),
            "PLACEHOLDER",
            "change-me",
        ),
        (
            "15-byte launch token",
            tenant("FIFTEEN_BYTES"),
            "FIFTEEN_BYTES",
            "fifteen-bytes!!",
        ),
        (
            "Twilio auth token placeholder",
            integration("twilio", "AC_PLACEHOLDER"),
            "AC_PLACEHOLDER",
            "ACchange-me",
        ),
        (
            "15-byte Twilio auth token",
            integration("twilio", "FIFTEEN_BYTES"),
            "FIFTEEN_BYTES",
            "fifteen-bytes!!",
        ),
        (
            "whsec_ placeholder",
            integration("json", "WHSEC_PLACEHOLDER"),
            "WHSEC_PLACEHOLDER",
            "whsec_change-me",
        ),
        (
            "15-byte whsec_ key",
            integration("json", "WHSEC_FIFTEEN"),
            "WHSEC_FIFTEEN",
            "whsec_Zml",
        ),
    ];
    for (case, text, variable, value) in refused {
        let shown = resolve(&text).expect_err(case).to_string();
        assert!(shown.contains(variable), "{case}: {shown}");
        assert!(!shown.contains(value), "{case}: {shown}");
    }
    for text in [
        tenant("SIXTEEN_BYTES"),
        integration("twilio", "SIXTEEN_BYTES"),
        integration("json", "WHSEC_SIXTEEN"),
    ] {
        resolve(&text).expect("16 bytes are enough");
    }
}

#[test]
fn an_empty_file_gives_defaults() {
    let config = resolve("").unwrap();
    assert!(config.integrations.is_empty());
    assert_eq!(config.signature_tolerance, Duration::from_secs(300));
    assert_eq!(config.listen.port(), 8080);
}

#[test]
fn serve_limits_come_from_the_file_then_the_environment_and_zero_is_refused() {
    let defaults = resolve("").unwrap().serve_limits;
    assert_eq!(defaults, ServeLimits::default());
    let mut config = resolve(
        "header_read_timeout_ms = 300\nidle_timeout_ms = 400\nmax_connections = 5\nrequest_timeout_ms = 700\n",
    )
    .unwrap();
    assert_eq!(
        config.serve_limits,
        ServeLimits {
            header_read_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(400),
            max_connections: 5,
        }
    );
    assert_eq!(config.request_timeout, Duration::from_millis(700));
    let env = FakeEnv(HashMap::from([
        ("CALLSTREAM_GATEWAY_HEADER_READ_TIMEOUT_MS", "250"),
        ("CALLSTREAM_GATEWAY_IDLE_TIMEOUT_MS", " 30000 "),
        ("CALLSTREAM_GATEWAY_MAX_CONNECTIONS", "64"),
    ]));
    config.apply_env(&env).unwrap();
    assert_eq!(
        config.serve_limits,
        ServeLimits {
            header_read_timeout: Duration::from_millis(250),
            idle_timeout: Duration::from_secs(30),
            max_connections: 64,
        }
    );
    let bad = FakeEnv(HashMap::from([(
        "CALLSTREAM_GATEWAY_MAX_CONNECTIONS",
        "lots",
    )]));
    let error = config.apply_env(&bad).unwrap_err().to_string();
    assert!(
        error.contains("CALLSTREAM_GATEWAY_MAX_CONNECTIONS"),
        "{error}"
    );
    for (key, setting) in [
        ("header_read_timeout_ms", "header_read_timeout_ms"),
        ("idle_timeout_ms", "idle_timeout_ms"),
        ("max_connections", "max_connections"),
        ("request_timeout_ms", "request_timeout_ms"),
    ] {
        let error = resolve(&format!("{key} = 0")).unwrap_err().to_string();
        assert!(error.contains(setting), "{error}");
    }
}

#[test]
fn a_kafka_table_sets_client_properties_beneath_the_environment() {
    let text = r#"
[kafka]
"bootstrap.servers" = "b1:9093,b2:9093"
"security.protocol" = "SASL_SSL"
"sasl.mechanism" = "SCRAM-SHA-512"
"sasl.username" = "gateway"
"sasl.password" = { env = "KAFKA_SECRET" }
"socket.timeout.ms" = 30000
"#;
    let file: FileConfig = toml::from_str(text).unwrap();
    let lookup = FakeEnv(HashMap::from([("KAFKA_SECRET", "s3cret")]));
    let mut from_env = KafkaSettings::new("127.0.0.1:9092", "t");
    from_env.properties = vec![("sasl.mechanism".into(), "PLAIN".into())];
    let config = file.resolve(from_env, Topics::default(), &lookup).unwrap();
    let props: std::collections::BTreeMap<_, _> = config.kafka.properties.iter().cloned().collect();
    assert_eq!(config.kafka.bootstrap_servers, "b1:9093,b2:9093");
    assert_eq!(props["security.protocol"], "SASL_SSL");
    assert_eq!(props["sasl.password"], "s3cret");
    assert_eq!(props["socket.timeout.ms"], "30000");
    // The environment's value wins.
    assert_eq!(props["sasl.mechanism"], "PLAIN");

    // KAFKA_BOOTSTRAP_SERVERS in the environment wins over the file's.
    let file: FileConfig = toml::from_str(text).unwrap();
    let lookup = FakeEnv(HashMap::from([
        ("KAFKA_SECRET", "s3cret"),
        ("KAFKA_BOOTSTRAP_SERVERS", "env:9092"),
    ]));
    let config = file
        .resolve(
            KafkaSettings::new("env:9092", "t"),
            Topics::default(),
            &lookup,
        )
        .unwrap();
    assert_eq!(config.kafka.bootstrap_servers, "env:9092");
}

#[test]
fn a_kafka_table_refuses_protected_properties_and_inline_secrets() {
    for (text, expected) in [
        ("[kafka]\nacks = \"1\"\n", "acks"),
        (
            "[kafka]\n\"enable.idempotence\" = false\n",
            "enable.idempotence",
        ),
        (
            "[kafka]\n\"sasl.password\" = \"inline\"\n",
            "never written in the config file",
        ),
        ("[kafka]\n\"ssl.ca.location\" = \"\"\n", "empty"),
    ] {
        let err = resolve(text).unwrap_err().to_string();
        assert!(err.contains(expected), "{text}: {err}");
    }
}
