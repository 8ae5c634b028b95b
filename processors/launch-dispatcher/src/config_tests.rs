//! Loading the configuration from the environment, and what it refuses.

use super::*;
use std::collections::HashMap;

fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

const BASE: &[(&str, &str)] = &[
    ("TWILIO_ACCOUNT_SID", "AC1"),
    ("TWILIO_AUTH_TOKEN", "secret"),
    (
        "CALLSTREAM_GATEWAY_PUBLIC_URL",
        "https://hooks.example.com/",
    ),
];

#[test]
fn the_environment_fills_every_field_and_defaults_the_rest() {
    let mut vars = BASE.to_vec();
    vars.extend([
        ("TWILIO_API_BASE_URL", "http://127.0.0.1:8091/"),
        (
            "CALLSTREAM_DISPATCH_INTEGRATIONS",
            "acme=tw-acme, globex=tw-globex",
        ),
        ("CALLSTREAM_DISPATCH_REQUEST_TIMEOUT_MS", "2500"),
        ("CALLSTREAM_DISPATCH_MAX_ATTEMPTS", "3"),
        ("TWILIO_TWIML_URL", "https://example.com/twiml"),
    ]);
    let config = DispatcherConfig::from_lookup(lookup(&vars)).unwrap();
    assert_eq!(config.twilio.base_url, "http://127.0.0.1:8091");
    assert_eq!(config.callbacks.base_url, "https://hooks.example.com");
    assert_eq!(config.callbacks.integration_for("acme"), "tw-acme");
    assert_eq!(config.callbacks.integration_for("other"), "twilio");
    assert_eq!(config.policy.request_timeout, Duration::from_millis(2500));
    assert_eq!(config.policy.retry.max_attempts, 3);
    assert_eq!(
        config.twilio.instructions,
        Instructions::Url("https://example.com/twiml".into())
    );
    assert!(!format!("{config:?}").contains("secret"), "token leaked");
}

#[test]
fn missing_or_malformed_settings_are_refused_by_name() {
    // (variables removed from BASE, variables added, what the error names)
    type Vars<'a> = &'a [(&'a str, &'a str)];
    let cases: &[(&[&str], Vars, &str)] = &[
        (&["TWILIO_ACCOUNT_SID"], &[], "TWILIO_ACCOUNT_SID"),
        (&["CALLSTREAM_GATEWAY_PUBLIC_URL"], &[], "CALLBACK_BASE_URL"),
        (
            &[],
            &[("CALLSTREAM_DISPATCH_MAX_ATTEMPTS", "many")],
            "MAX_ATTEMPTS",
        ),
        (
            &[],
            &[("CALLSTREAM_DISPATCH_MAX_ATTEMPTS", "0")],
            "MAX_ATTEMPTS",
        ),
        (
            &[],
            &[("CALLSTREAM_DISPATCH_INTEGRATIONS", "acme")],
            "INTEGRATIONS",
        ),
        (
            &[],
            &[("TWILIO_API_BASE_URL", "ftp://x")],
            "TWILIO_API_BASE_URL",
        ),
        (
            &[],
            &[("CALLSTREAM_DISPATCH_CALLS_PER_SECOND", "0")],
            "CALLS_PER_SECOND",
        ),
        (
            &[],
            &[("CALLSTREAM_DISPATCH_RETRY_BASE_MS", "0")],
            "RETRY_BASE_MS",
        ),
        (
            &[],
            &[("CALLSTREAM_TOPIC_PARTITIONS", "0")],
            "CALLSTREAM_TOPIC_PARTITIONS",
        ),
    ];
    for (removed, added, expected) in cases {
        let mut vars: Vec<(&str, &str)> = BASE
            .iter()
            .copied()
            .filter(|(k, _)| !removed.contains(k))
            .collect();
        vars.extend(added.iter().copied());
        let error = DispatcherConfig::from_lookup(lookup(&vars)).unwrap_err();
        assert!(error.to_string().contains(expected), "{error} / {expected}");
    }
}

#[test]
fn topic_settings_come_from_the_lookup_not_the_process_environment() {
    let mut vars = BASE.to_vec();
    vars.extend([
        ("CALLSTREAM_TOPIC_PREFIX", "run7."),
        ("CALLSTREAM_TOPIC_PARTITIONS", "4"),
        ("CALLSTREAM_REPLICATION_FACTOR", "3"),
    ]);
    let config = DispatcherConfig::from_lookup(lookup(&vars)).unwrap();
    assert_eq!(
        config.topics.name("launch-commands"),
        "run7.launch-commands"
    );
    assert_eq!(
        (
            config.topics.partitions,
            config.topics.replication_factor,
            config.topics.min_insync_replicas
        ),
        (4, 3, 1)
    );
    let defaults = DispatcherConfig::from_lookup(lookup(BASE)).unwrap();
    assert_eq!(defaults.topics, Topics::default());
}

#[test]
fn a_placeholder_twilio_credential_is_refused_by_name_without_its_value() {
    for (name, value) in [
        ("TWILIO_ACCOUNT_SID", "ACchange-me"),
        ("TWILIO_AUTH_TOKEN", "change-me"),
    ] {
        let mut vars: Vec<(&str, &str)> =
            BASE.iter().copied().filter(|(n, _)| *n != name).collect();
        vars.push((name, value));
        let error = DispatcherConfig::from_lookup(lookup(&vars))
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(name), "{error}");
        assert!(!error.contains(value), "{error}");
    }
}

#[test]
fn on_a_scaled_clock_the_timers_cover_as_much_real_time() {
    let policy = DispatchPolicy::default();
    let scaled = callstream_runtime::ScaledClock::new(0, 0, 96.0).unwrap();
    let stretched = policy.in_business_time(&scaled);
    // A reconciliation still waits for a create that takes its full real timeout.
    assert_eq!(stretched.request_timeout, policy.request_timeout * 96);
    assert_eq!(stretched.send_deadline, policy.send_deadline * 96);
    assert_eq!(stretched.settle, policy.settle * 96);
    assert_eq!(stretched.retry.base_delay, policy.retry.base_delay * 96);
    // Business durations stay as configured.
    assert_eq!(stretched.ledger_retention, policy.ledger_retention);
    assert_eq!(stretched.max_lookups, policy.max_lookups);
    assert_eq!(
        policy.in_business_time(&callstream_runtime::SystemClock),
        policy
    );
}
