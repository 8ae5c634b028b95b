use clap::Parser;

use super::*;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    config: SimVoiceConfig,
}

#[test]
fn flags_default_to_the_serde_defaults() {
    // Nothing in the test environment sets SIM_VOICE_*, so this is the
    // flags' defaults alone.
    let parsed = Cli::try_parse_from(["sim"]).unwrap().config;
    assert_eq!(parsed, SimVoiceConfig::default());
    let empty: SimVoiceConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(empty, SimVoiceConfig::default());
    assert_eq!(SimVoiceConfig::default().validate(), Ok(()));
}

#[test]
fn flags_set_fields() {
    let parsed = Cli::try_parse_from([
        "sim",
        "--seed",
        "7",
        "--time-scale",
        "0.001",
        "--completion-drop-share",
        "0.05",
        "--analysis-url",
        "http://127.0.0.1:1/v1/webhooks/json/i",
    ])
    .unwrap()
    .config;
    assert_eq!(parsed.seed, 7);
    assert_eq!(parsed.behaviour.time_scale, 0.001);
    assert_eq!(parsed.behaviour.completion_drop_share, 0.05);
    assert_eq!(parsed.validate(), Ok(()));
}

#[test]
fn validation_refuses_what_cannot_be_played() {
    type Edit = fn(&mut Behaviour);
    let cases: &[(&str, Edit, ConfigError)] = &[
        (
            "zero time scale",
            |b| b.time_scale = 0.0,
            ConfigError::TimeScale,
        ),
        (
            "NaN time scale",
            |b| b.time_scale = f64::NAN,
            ConfigError::TimeScale,
        ),
        (
            "share above one",
            |b| b.duplicate_share = 1.5,
            ConfigError::Share("duplicate_share"),
        ),
        (
            "negative share",
            |b| b.create_error_share = -0.1,
            ConfigError::Share("create_error_share"),
        ),
        (
            "negative weight",
            |b| b.weight_busy = -1.0,
            ConfigError::Negative("weight_busy"),
        ),
        (
            "range upside down",
            |b| b.talk_secs_min = 500.0,
            ConfigError::Range("talk_secs"),
        ),
        (
            "no outcome weight",
            |b| {
                b.weight_human = 0.0;
                b.weight_voicemail = 0.0;
                b.weight_no_answer = 0.0;
                b.weight_busy = 0.0;
                b.weight_failed = 0.0;
            },
            ConfigError::NoWeight("weight_*"),
        ),
    ];
    for (name, edit, want) in cases {
        let mut b = Behaviour::default();
        edit(&mut b);
        assert_eq!(b.validate(), Err(want.clone()), "{name}");
    }
}

#[test]
fn secrets_and_urls_are_checked() {
    let bad_secret = SimVoiceConfig {
        analysis_secret: "not-a-secret".into(),
        ..SimVoiceConfig::default()
    };
    assert_eq!(
        bad_secret.validate(),
        Err(ConfigError::Secret("analysis_secret"))
    );
    let bad_url = SimVoiceConfig {
        analysis_url: Some("ftp://x/y".into()),
        ..SimVoiceConfig::default()
    };
    assert!(matches!(bad_url.validate(), Err(ConfigError::Url { .. })));
}

#[test]
fn unknown_behaviour_fields_are_refused() {
    let got = serde_json::from_str::<Behaviour>(r#"{"dupliate_share": 0.5}"#);
    assert!(got.is_err());
}
