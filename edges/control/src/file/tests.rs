use super::*;

const EXAMPLE: &str = include_str!("../../example-control.toml");

fn problems(text: &str) -> Vec<String> {
    match ControlFile::parse(text) {
        Err(FileError::Invalid(problems)) => problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected validation problems, got {other:?}"),
    }
}

fn syntax(text: &str) -> String {
    match ControlFile::parse(text) {
        Err(FileError::Syntax(error)) => error.to_string(),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn the_example_file_is_valid_and_sets_what_it_says() {
    let file = ControlFile::parse(EXAMPLE).unwrap();
    assert_eq!(file.system_paused, Some(false));
    let acme = &file.tenants["acme"];
    assert_eq!(
        acme.grid.as_ref().unwrap().default_time_zone,
        "America/Chicago"
    );
    let enrolment = &acme.campaigns["enrolment"].settings;
    assert_eq!(enrolment.retry_delays_minutes, vec![2880, 4320]);
    assert_eq!(enrolment.next_campaign_id.as_deref(), Some("nurture"));
    assert_eq!(enrolment.windows.len(), 2);
    assert_eq!(enrolment.windows[0].days_of_week, vec![1, 2, 3, 4, 5]);
    assert_eq!(
        (
            enrolment.windows[1].start_minute,
            enrolment.windows[1].end_minute
        ),
        (600, 840)
    );
    assert!(file.tenants["globex"].shadow_mode);
    assert_eq!(
        file.scope(),
        ["*", "acme", "globex"]
            .map(String::from)
            .into_iter()
            .collect()
    );
    let desired = file.desired();
    let key = SettingKey::new("acme", ControlSetting::CampaignPause, Some("enrolment"));
    assert_eq!(desired[&key].enabled, Some(false));
    // 1 system + acme (3 flags, grid, completion, defaults, notifications, 2 campaigns × 2)
    // + globex (3 flags, grid, 1 campaign × 2).
    assert_eq!(desired.len(), 1 + (3 + 4 + 4) + (3 + 1 + 2));
}

#[test]
fn omitted_fields_take_the_defaults() {
    let file = ControlFile::parse("[tenants.t.campaigns.c]\n").unwrap();
    let t = &file.tenants["t"];
    assert!(!t.paused && !t.shadow_mode && t.crm_writes);
    assert_eq!(
        t.campaigns["c"].settings,
        callstream_kit::control::settings::CampaignConfig::builtin().to_wire()
    );
    assert_eq!(file.system_paused, None);
    assert!(!file.scope().contains("*"));
}

#[test]
fn windows_cross_midnight_and_end_at_24() {
    let file = ControlFile::parse(
        r#"[tenants.t.campaigns.c]
windows = [{ days = ["fri"], start = "20:00", end = "02:00" },
           { days = "weekends", start = "10:00", end = "24:00" },
           { days = "mon", start = "10:00", end = "00:00" }]"#,
    )
    .unwrap();
    let w = &file.tenants["t"].campaigns["c"].settings.windows;
    assert_eq!((w[0].start_minute, w[0].end_minute), (1200, 120));
    assert_eq!(
        (w[1].days_of_week.clone(), w[1].end_minute),
        (vec![6, 7], 1440)
    );
    assert_eq!(w[2].end_minute, 1440);
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let text = r#"
[tenants.acme.grid]
slot_seconds = 0
launches_per_slot = 5000
default_time_zone = "Mars/Olympus"

[tenants.acme.completion]
window_minutes = 0

[tenants.acme.campaigns.enrol]
windows = [{ days = "weekdays", start = "25:00", end = "17:00" },
           { days = [], start = "09:00", end = "17:00:30" }]
retry_delays_minutes = [0, 60]
max_attempts = 0
next_campaign = "nuture"
move_buffer_minutes = -5

[tenants.acme.campaigns.loop]
next_campaign = "loop"
retry_delays_minutes = []

[tenants."bad/id"]
[tenants."*"]
"#;
    let got = problems(text);
    let expected_paths = [
        "tenants.acme.grid.slot_seconds: must be between 1 and 3600, not 0",
        "tenants.acme.grid.launches_per_slot: must be between 1 and 1000, not 5000",
        "tenants.acme.grid.default_time_zone: unknown time zone name \"Mars/Olympus\"",
        "tenants.acme.completion.window_minutes: must be between 1 and 1440, not 0",
        "tenants.acme.campaigns.enrol.windows[0].start: bad time \"25:00\"",
        "tenants.acme.campaigns.enrol.windows[1].days: needs at least one day",
        "tenants.acme.campaigns.enrol.windows[1].end: \"17:00:30\": windows are in whole minutes",
        "tenants.acme.campaigns.enrol.retry_delays_minutes[0]: must be between 1",
        "tenants.acme.campaigns.enrol.max_attempts: must be between 1 and 100, not 0",
        "tenants.acme.campaigns.enrol.next_campaign: \"nuture\" is not a campaign of this tenant",
        "tenants.acme.campaigns.enrol.move_buffer_minutes: must be between 0 and 1440, not -5",
        "tenants.acme.campaigns.loop.retry_delays_minutes: needs at least one delay",
        "tenants.acme.campaigns.loop.next_campaign: a campaign cannot advance to itself",
        "tenants.bad/id: tenant id \"bad/id\" must not contain '/'",
        "tenants.*: `*` is reserved",
    ];
    for expected in expected_paths {
        assert!(
            got.iter().any(|p| p.starts_with(expected)),
            "missing {expected:?} in:\n{}",
            got.join("\n")
        );
    }
    assert_eq!(got.len(), expected_paths.len(), "{}", got.join("\n"));
    // The error's text lists them all, one a line.
    let message = ControlFile::parse(text).unwrap_err().to_string();
    assert!(
        message.starts_with("15 problem(s):\n  - tenants."),
        "{message}"
    );
}

#[test]
fn typos_and_wrong_types_are_syntax_errors_with_a_line() {
    let cases = [
        ("[tenants.t]\npaused = \"yes\"\n", "invalid type"),
        ("[tenants.t]\nshadowmode = true\n", "unknown field `shadowmode`"),
        ("[tenants.t.campaigns.c]\nwindow = []\n", "unknown field `window`"),
        (
            "[tenants.t.campaigns.c]\nwindows = [{ days = \"someday\", start = \"09:00\", end = \"10:00\" }]\n",
            "unknown day",
        ),
        ("[tenants.t.grid]\nslot_seconds = 75\n", "missing field `default_time_zone`"),
        ("[tenant.t]\n", "unknown field `tenant`"),
        ("tenants = [", "invalid"),
    ];
    for (text, expected) in cases {
        let message = syntax(text);
        assert!(message.contains(expected), "{text:?}: {message}");
        assert!(
            message.contains("line"),
            "{text:?} gives no line: {message}"
        );
    }
}

#[test]
fn notification_routes_are_read_and_checked_as_the_notifier_reads_them() {
    let file = ControlFile::parse(EXAMPLE).unwrap();
    let routes = file.tenants["acme"].notifications.as_ref().unwrap();
    assert_eq!(routes.routes.len(), 2);
    assert_eq!(routes.routes[1].channel, "acme-ops-chat");
    assert!(routes.routes[1].urgent);
    assert_eq!(routes.digest_seconds, 300);
    let desired = file.desired();
    let key = SettingKey::new("acme", ControlSetting::NotificationRoutes, None);
    assert_eq!(desired[&key].notifications.as_ref(), Some(routes));

    let bad = problems(
        r#"
[tenants.acme.notifications]
digest_seconds = 100000
quiet_hours = { time_zone = "Mars/Olympus", start = "21:00", end = "07:00" }
[[tenants.acme.notifications.routes]]
kinds = ["exc*ption"]
channel = "a/b"
"#,
    );
    assert!(
        bad.iter()
            .any(|p| p.starts_with("tenants.acme.notifications.routes[0].channel")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|p| p.starts_with("tenants.acme.notifications.digest_seconds")),
        "{bad:?}"
    );
    let zone = problems(
        r#"
[tenants.acme.notifications]
quiet_hours = { time_zone = "Mars/Olympus", start = "21:00", end = "07:00" }
"#,
    );
    assert!(zone[0].contains("quiet_hours.time_zone"), "{zone:?}");
    let pattern = problems(
        r#"
[[tenants.acme.notifications.routes]]
kinds = ["exc*ption"]
channel = "ops"
"#,
    );
    assert!(pattern[0].contains("kind pattern"), "{pattern:?}");
}

#[test]
fn calling_rules_are_read_and_checked_against_the_statutory_table() {
    let file = ControlFile::parse(
        r#"
[tenants.acme.calling_rules]
cap_subject = "tenant"
default_state = "IL"
[[tenants.acme.calling_rules.rules]]
id = "tenant:7_per_7d"
kind = "frequency_cap"
params = "max=7; window=7d"
[[tenants.acme.calling_rules.overrides]]
rule = "state_holiday:MS"
reason = "counsel: Mississippi's holiday rule was repealed (memo 2026-11-02)"

[tenants.acme.campaigns.collections]
windows = [{ days = "weekdays", start = "09:00", end = "20:00" }]
[tenants.acme.campaigns.collections.calling_rules]
cap_subject = "campaign"
[[tenants.acme.campaigns.collections.calling_rules.rules]]
id = "tenant:reg_f_7_per_7d"
kind = "frequency_cap"
params = "max=7; window=7d"
"#,
    )
    .unwrap();
    let rules = file.tenants["acme"].calling_rules.as_ref().unwrap();
    assert_eq!(rules.rules[0].id, "tenant:7_per_7d");
    assert_eq!(rules.cap_subject, "tenant");
    assert_eq!(rules.default_state.as_deref(), Some("IL"));
    let key = SettingKey::new("acme", ControlSetting::CallingRules, None);
    assert_eq!(file.desired()[&key].calling_rules.as_deref(), Some(rules));
    // A campaign's own rules, published under the campaign's key.
    let campaign = file.tenants["acme"].campaigns["collections"]
        .calling_rules
        .as_ref()
        .unwrap();
    assert_eq!(campaign.rules[0].id, "tenant:reg_f_7_per_7d");
    let key = SettingKey::new("acme", ControlSetting::CallingRules, Some("collections"));
    assert_eq!(
        file.desired()[&key].calling_rules.as_deref(),
        Some(campaign)
    );

    for (bad, says) in [
        (
            "[[tenants.acme.calling_rules.overrides]]\nrule = \"state_hours:FL\"\nreason = \" \"\n",
            "needs a reason",
        ),
        (
            "[[tenants.acme.calling_rules.overrides]]\nrule = \"state_hours:ZZ\"\nreason = \"x\"\n",
            "names no statutory rule",
        ),
        (
            "[[tenants.acme.calling_rules.rules]]\nid = \"mine\"\nkind = \"frequency_cap\"\nparams = \"max=1; window=24h\"\n",
            "tenant:",
        ),
        (
            "[tenants.acme.calling_rules]\ncap_subject = \"contact\"\n",
            "cap_subject",
        ),
        (
            "[tenants.acme.calling_rules]\ndefault_state = \"Atlantis\"\n",
            "default_state",
        ),
    ] {
        let found = problems(bad);
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("tenants.acme.calling_rules") && p.contains(says)),
            "{bad}: {found:?}"
        );
    }
}
