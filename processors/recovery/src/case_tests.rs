use std::time::Duration;

use callstream_platform::Topics;
use proptest::prelude::*;

use super::*;
use crate::config::TwilioAccess;

pub(crate) fn config() -> RecoveryConfig {
    RecoveryConfig::new(
        Topics::default(),
        TwilioAccess {
            base_url: "http://127.0.0.1:1".into(),
            account_sid: "AC1".into(),
            auth_token: "t".into(),
        },
    )
}

pub(crate) fn case(n: u128) -> Case {
    Case {
        launch_id: Uuid::from_u128(n),
        missing_event_id: Uuid::from_u128(n + 100),
        tenant_id: "t1".into(),
        contact_id: "c1".into(),
        campaign_id: Some("camp".into()),
        job_id: None,
        provider: "twilio".into(),
        provider_call_id: format!("CA{n}"),
        correlation_id: None,
        actor: Actor::system("recovery"),
        command_id: None,
        phase: Phase::Fetching { fetch: 1 },
        fetches: 1,
        polls: 0,
        failures: 0,
        failed_exception: false,
    }
}

fn found(status: &str, answered_by: Option<&str>, seq: Option<&str>) -> FetchResult {
    FetchResult::Found {
        record: CallRecord {
            status: status.into(),
            answered_by: answered_by.map(str::to_string),
            duration_seconds: Some(20),
            ended_at_ms: Some(5),
            sequence_number: seq.map(str::to_string),
        },
    }
}

fn kind(next: &Next) -> String {
    match next {
        Next::Recovered { outcome, .. } => format!("recovered {outcome}"),
        Next::AdvanceNoAnswer => "advance".into(),
        Next::Poll { .. } => "poll".into(),
        Next::Retry { .. } => "retry".into(),
        Next::Fail { .. } => "fail".into(),
    }
}

#[test]
fn what_a_lookup_means() {
    let failed = |retriable| FetchResult::Failed {
        retriable,
        reason: "x".into(),
    };
    let cases = [
        (found("completed", None, Some("3")), "recovered answered"),
        (
            found("completed", Some("machine_start"), Some("3")),
            "recovered voicemail",
        ),
        (found("no-answer", None, Some("2")), "recovered no_answer"),
        (found("busy", None, Some("2")), "recovered busy"),
        (found("in-progress", None, None), "poll"),
        (found("ringing", None, None), "poll"),
        (found("completed", None, None), "retry"),
        (found("exploded", None, None), "fail"),
        (FetchResult::NotFound, "advance"),
        (failed(true), "retry"),
        (failed(false), "fail"),
    ];
    for (result, expected) in cases {
        let mut c = case(1);
        assert_eq!(
            kind(&decide(&mut c, &result, 0, &config())),
            expected,
            "{result:?}"
        );
    }
}

#[test]
fn polls_and_retries_are_bounded() {
    let cfg = RecoveryConfig {
        max_polls: 3,
        max_attempts: 4,
        ..config()
    };
    let mut c = case(1);
    let looks: Vec<String> = (0..4)
        .map(|_| kind(&decide(&mut c, &found("in-progress", None, None), 0, &cfg)))
        .collect();
    assert_eq!(looks, ["poll", "poll", "poll", "fail"]);
    let mut c = case(2);
    let error = FetchResult::Failed {
        retriable: true,
        reason: "503".into(),
    };
    let tries: Vec<String> = (0..4)
        .map(|_| kind(&decide(&mut c, &error, 0, &cfg)))
        .collect();
    assert_eq!(tries, ["retry", "retry", "retry", "fail"]);
}

proptest! {
    #[test]
    fn retry_delays_double_within_their_jitter(n in 1u32..40, launch in any::<u128>()) {
        let cfg = RecoveryConfig {
            retry_base: Duration::from_millis(1_000),
            retry_max: Duration::from_millis(60_000),
            ..config()
        };
        let id = Uuid::from_u128(launch);
        let delay = retry_delay_ms(&id, n, &cfg);
        let nominal = (1_000i64 << (n - 1).min(30)).min(60_000);
        prop_assert!(delay >= nominal / 2 && delay <= nominal, "{} of {}", delay, nominal);
        prop_assert_eq!(delay, retry_delay_ms(&id, n, &cfg));
    }
}

#[test]
fn closed_cases_and_commands_are_remembered_for_a_while() {
    let mut cases = ContactCases {
        cases: vec![case(1), case(2)],
        ..ContactCases::default()
    };
    let closed = cases.close(0, 1_000);
    assert_eq!(closed.launch_id, Uuid::from_u128(1));
    assert!(cases.is_closed(&Uuid::from_u128(1)));
    assert_eq!(cases.next_expiry(500), Some(1_500));
    cases.expire(1_500, 500);
    assert!(!cases.is_closed(&Uuid::from_u128(1)));
    assert!(cases.remember_command(Uuid::from_u128(7)));
    assert!(!cases.remember_command(Uuid::from_u128(7)));
    for i in 0..40 {
        cases.remember_command(Uuid::from_u128(1_000 + i));
    }
    assert_eq!(cases.commands.len(), 32);
}
