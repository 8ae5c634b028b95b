use std::collections::HashMap;

use super::*;

fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn one_token_serves_every_tenant_only_when_no_tenant_has_its_own() {
    let one = CrmDispatcherConfig::from_lookup(
        Topics::default(),
        lookup(&[("CALLSTREAM_CRM_TOKEN", "tok")]),
    )
    .unwrap();
    assert_eq!(one.token_for("any"), Some("tok"));
    let own = CrmDispatcherConfig::from_lookup(
        Topics::default(),
        lookup(&[("CALLSTREAM_CRM_TENANT_TOKENS", "t1=a")]),
    )
    .unwrap();
    assert_eq!(own.token_for("t1"), Some("a"));
    assert_eq!(own.token_for("t2"), None);
    let neither = CrmDispatcherConfig::from_lookup(Topics::default(), lookup(&[]));
    assert!(neither.is_err(), "a token is required");
}

#[test]
fn the_environment_sets_every_field_and_defaults_fill_the_rest() {
    let config = CrmDispatcherConfig::from_lookup(
        Topics::default(),
        lookup(&[
            ("CALLSTREAM_CRM_TOKEN", "tok"),
            ("CALLSTREAM_CRM_BASE_URL", "http://127.0.0.1:8092/"),
            ("CALLSTREAM_CRM_TENANT_TOKENS", "t1=a, t2=b"),
            ("CALLSTREAM_CRM_RATE_LIMIT_MAX", "50"),
            ("CALLSTREAM_CRM_SETTLE_MS", "750"),
            ("CALLSTREAM_CRM_SETTLE_WINDOW_MS", "120000"),
            ("CALLSTREAM_CRM_SEARCH_INTERVAL_MS", "5000"),
            ("CALLSTREAM_CRM_SEARCH_RATE_MAX", "3"),
            ("CALLSTREAM_CRM_MAX_FAILURES", "4"),
        ]),
    )
    .unwrap();
    assert_eq!(config.base_url, "http://127.0.0.1:8092");
    assert_eq!(config.token_for("t1"), Some("a"));
    // Tenants have tokens of their own: one without is refused, never
    // written with another tenant's token (issue 14, hole 7).
    assert_eq!(config.token_for("t3"), None);
    assert_eq!(config.rate_limit.max_requests, 50);
    assert_eq!(config.rate_limit.window, Duration::from_secs(10));
    assert_eq!(config.policy.settle, Duration::from_millis(750));
    assert_eq!(config.policy.settle_window, Duration::from_secs(120));
    assert_eq!(config.policy.search_interval, Duration::from_secs(5));
    assert_eq!(config.search_limit.max_requests, 3);
    assert_eq!(config.search_limit.window, Duration::from_secs(1));
    assert_eq!(config.policy.retry.max_failures, 4);
    assert_eq!(config.policy.request_timeout, Duration::from_secs(10));
    assert!(
        !format!("{config:?}").contains("tok\""),
        "tokens never print"
    );
}

#[test]
fn bad_settings_are_refused_with_their_name() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[], "CALLSTREAM_CRM_TOKEN"),
        (
            &[
                ("CALLSTREAM_CRM_TOKEN", "t"),
                ("CALLSTREAM_CRM_BASE_URL", "ftp://x"),
            ],
            "CALLSTREAM_CRM_BASE_URL",
        ),
        (
            &[
                ("CALLSTREAM_CRM_TOKEN", "t"),
                ("CALLSTREAM_CRM_SEND_WINDOW_MS", "0"),
            ],
            "CALLSTREAM_CRM_SEND_WINDOW_MS",
        ),
        (
            &[
                ("CALLSTREAM_CRM_TOKEN", "t"),
                ("CALLSTREAM_CRM_MAX_FAILURES", "x"),
            ],
            "CALLSTREAM_CRM_MAX_FAILURES",
        ),
        (
            &[
                ("CALLSTREAM_CRM_TOKEN", "t"),
                ("CALLSTREAM_CRM_RATE_LIMIT_HEADROOM", "1.5"),
            ],
            "CALLSTREAM_CRM_RATE_LIMIT_HEADROOM",
        ),
        (
            &[
                ("CALLSTREAM_CRM_TOKEN", "t"),
                ("CALLSTREAM_CRM_TENANT_TOKENS", "t1=secret,broken"),
            ],
            "CALLSTREAM_CRM_TENANT_TOKENS",
        ),
        (
            &[
                ("CALLSTREAM_CRM_TOKEN", "t"),
                ("CALLSTREAM_CRM_CONNECT_TIMEOUT_MS", "20000"),
            ],
            "CALLSTREAM_CRM_CONNECT_TIMEOUT_MS",
        ),
        (
            &[("CALLSTREAM_CRM_TOKEN", "change-me")],
            "CALLSTREAM_CRM_TOKEN",
        ),
        (
            // Shorter than a request asked for, sent and timed out.
            &[
                ("CALLSTREAM_CRM_TOKEN", "t"),
                ("CALLSTREAM_CRM_SETTLE_WINDOW_MS", "30000"),
            ],
            "CALLSTREAM_CRM_SETTLE_WINDOW_MS",
        ),
        (
            &[
                ("CALLSTREAM_CRM_TOKEN", "t"),
                ("CALLSTREAM_CRM_SEARCH_INTERVAL_MS", "0"),
            ],
            "CALLSTREAM_CRM_SEARCH_INTERVAL_MS",
        ),
        (
            &[
                ("CALLSTREAM_CRM_TOKEN", "t"),
                ("CALLSTREAM_CRM_TENANT_TOKENS", "t1=pat-change-me"),
            ],
            "CALLSTREAM_CRM_TENANT_TOKENS (tenant t1)",
        ),
    ];
    for (pairs, name) in cases {
        let error = CrmDispatcherConfig::from_lookup(Topics::default(), lookup(pairs)).unwrap_err();
        let text = error.to_string();
        assert!(text.contains(name), "{pairs:?}: {text}");
        assert!(!text.contains("secret"), "a token leaked: {text}");
    }
}

#[test]
fn the_quota_plan_stays_under_the_limit() {
    let cases = [
        (100, 0.05, 96),
        (100, 0.0, 100),
        (100, 0.2, 89),
        (1, 0.05, 1),
        (10, 0.5, 6),
    ];
    for (max, headroom, want) in cases {
        let limit = RateLimit {
            max_requests: max,
            window: Duration::from_secs(10),
            headroom,
        };
        let plan = limit.plan().unwrap();
        assert_eq!(plan.max_per_window, want, "{max} {headroom}");
        assert!(plan.max_per_window <= max);
    }
    let unlimited = RateLimit {
        max_requests: 0,
        ..RateLimit::default()
    };
    assert_eq!(unlimited.plan(), None);
}

#[test]
fn the_result_deadline_covers_sending_answering_and_settling() {
    let policy = DispatchPolicy::default();
    assert_eq!(policy.send_by_ms(1_000), 31_000);
    assert_eq!(policy.result_deadline_ms(1_000), 31_000 + 10_000 + 5_000);
}

#[test]
fn on_a_scaled_clock_the_timers_cover_as_much_real_time() {
    let policy = DispatchPolicy::default();
    let scaled = callstream_runtime::ScaledClock::new(0, 0, 96.0).unwrap();
    let stretched = policy.in_business_time(&scaled);
    // The search still waits out 5 real seconds of index lag: 8 business minutes at 96x.
    assert_eq!(stretched.settle, Duration::from_secs(5 * 96));
    assert_eq!(
        stretched.result_deadline_ms(0),
        policy.result_deadline_ms(0) * 96
    );
    assert_eq!(stretched.retry.max_failures, policy.retry.max_failures);
    assert_eq!(stretched.retry.max_delay, policy.retry.max_delay * 96);
    // The system clock changes nothing.
    assert_eq!(
        policy.in_business_time(&callstream_runtime::SystemClock),
        policy
    );
}
