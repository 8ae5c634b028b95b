use std::collections::HashMap;

use super::*;

#[test]
fn every_avro_topic_has_a_value_subject_under_its_physical_name() {
    let topics = Topics::with_prefix("t1-");
    let subjects = value_subjects(&topics);
    assert!(subjects.contains(&("t1-call-events-value".into(), EventKind::CallEvent)));
    assert!(subjects.contains(&("t1-control-value".into(), EventKind::ControlChange)));
    assert!(subjects.contains(&("t1-control-history-value".into(), EventKind::ControlChange)));
    // JSON and dead-letter topics have no schema.
    assert!(!subjects.iter().any(|(s, _)| s.contains("dead-letters")
        || s.contains("delivery-partials")
        || s.contains("notifier-signals")));
    // Every event type is on some topic.
    for kind in EventKind::ALL {
        assert!(
            subjects.iter().any(|(_, k)| k == kind),
            "{kind:?} has no topic"
        );
    }
}

#[test]
fn credentials_stay_out_of_messages() {
    let client = RegistryClient::new("https://KEY:SECRET@registry.example.com/api/").unwrap();
    assert_eq!(client.url(), "https://***@registry.example.com/api");
    let plain = RegistryClient::new("http://127.0.0.1:8085/apis/ccompat/v7").unwrap();
    assert_eq!(plain.url(), "http://127.0.0.1:8085/apis/ccompat/v7");
}

#[test]
fn the_setting_turns_the_registry_on() {
    let settings = |pairs: &[(&str, &str)]| {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::new(move |name: &str| map.get(name).cloned())
    };
    assert!(RegistryClient::from_settings(&settings(&[]))
        .unwrap()
        .is_none());
    assert!(
        RegistryClient::from_settings(&settings(&[(URL_SETTING, " ")]))
            .unwrap()
            .is_none()
    );
    let client = RegistryClient::from_settings(&settings(&[(URL_SETTING, "http://r:1/x/")]))
        .unwrap()
        .unwrap();
    assert_eq!(client.url(), "http://r:1/x");
    let error = RegistryClient::from_settings(&settings(&[(URL_SETTING, "r:1")])).unwrap_err();
    assert!(error.to_string().contains("not an http"), "{error}");
    let missing = RegistryClient::from_settings(&settings(&[(URL_FILE_SETTING, "/no/such/file")]))
        .unwrap_err();
    assert!(missing.to_string().contains("/no/such/file"), "{missing}");
}

#[test]
fn only_silence_server_errors_and_rate_limits_are_worth_waiting_for() {
    let unexpected = |status| RegistryError::Unexpected {
        what: "x".into(),
        status,
        body: String::new(),
    };
    assert!(RegistryError::Unreachable {
        url: "u".into(),
        detail: "refused".into()
    }
    .is_transient());
    assert!(unexpected(503).is_transient());
    assert!(unexpected(429).is_transient());
    assert!(!unexpected(400).is_transient());
    assert!(!RegistryError::Refused {
        subject: "s".into(),
        status: 409,
        message: "incompatible".into()
    }
    .is_transient());
    assert!(!RegistryError::NoSuchId(7).is_transient());
}
