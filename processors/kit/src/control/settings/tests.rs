use super::*;
use proptest::prelude::*;

fn wire(days: Vec<i32>, start: i32, end: i32) -> WireWindow {
    WireWindow {
        days_of_week: days,
        start_minute: start,
        end_minute: end,
    }
}

fn campaign(windows: Vec<WireWindow>) -> CampaignSettings {
    CampaignSettings {
        windows,
        retry_delays_minutes: vec![60, 2880],
        max_attempts: 4,
        next_campaign_id: Some("nurture".into()),
        move_buffer_minutes: 10,
    }
}

#[test]
fn wire_windows_are_checked_with_a_reason() {
    let cases: Vec<(Vec<WireWindow>, Option<SettingError>)> = vec![
        (vec![wire(vec![1, 2, 3, 4, 5], 540, 1200)], None),
        (vec![wire(vec![5], 1200, 120)], None), // crosses midnight
        (vec![wire(vec![7], 540, 1440)], None), // until midnight
        (
            vec![wire(vec![0], 540, 1200)],
            Some(SettingError::BadDay { index: 0, day: 0 }),
        ),
        (
            vec![wire(vec![1], 540, 1200), wire(vec![8], 540, 1200)],
            Some(SettingError::BadDay { index: 1, day: 8 }),
        ),
        (
            vec![wire(vec![1], 1440, 1200)],
            Some(SettingError::BadStart {
                index: 0,
                minute: 1440,
            }),
        ),
        (
            vec![wire(vec![1], 540, 0)],
            Some(SettingError::BadEnd {
                index: 0,
                minute: 0,
            }),
        ),
        (
            vec![],
            Some(SettingError::Window(
                callstream_domain::calling_window::WindowError::NoRules,
            )),
        ),
        (
            vec![wire(vec![], 540, 1200)],
            Some(SettingError::Window(
                callstream_domain::calling_window::WindowError::NoDays { index: 0 },
            )),
        ),
    ];
    for (windows, expected) in cases {
        let got = window_from_wire(&windows).err();
        assert_eq!(got, expected, "{windows:?}");
    }
}

#[test]
fn campaign_settings_become_the_domain_policy() {
    let config =
        CampaignConfig::from_wire("enrol", &campaign(vec![wire(vec![1], 540, 1200)])).unwrap();
    assert_eq!(config.policy.voicemail_retry_minutes, vec![60, 2880]);
    assert_eq!(config.policy.no_answer_retry_minutes, vec![60, 2880]);
    assert_eq!(config.policy.busy_retry_minutes, vec![60, 2880]);
    assert_eq!(config.policy.max_attempts, 4);
    assert_eq!(config.policy.next_campaign.as_deref(), Some("nurture"));
    assert_eq!(config.move_buffer, Duration::from_secs(600));
    assert_eq!(config.origin, Origin::Set);
    // The domain's own checks apply: a campaign cannot advance to itself.
    let err = CampaignConfig::from_wire("nurture", &campaign(vec![wire(vec![1], 540, 1200)]));
    assert!(matches!(err, Err(SettingError::Policy(_))), "{err:?}");
    let mut zero = campaign(vec![wire(vec![1], 540, 1200)]);
    zero.max_attempts = 0;
    assert!(matches!(
        CampaignConfig::from_wire("enrol", &zero),
        Err(SettingError::TooSmall {
            field: "max_attempts",
            ..
        })
    ));
}

#[test]
fn builtin_campaign_round_trips_through_the_wire() {
    let builtin = CampaignConfig::builtin();
    let back = CampaignConfig::from_wire("c", &builtin.to_wire()).unwrap();
    assert_eq!(back.window, builtin.window);
    assert_eq!(back.policy, builtin.policy);
    assert_eq!(back.move_buffer, builtin.move_buffer);
}

#[test]
fn grid_and_completion_settings_are_checked() {
    let ok = TenantGrid::from_wire(&GridSettings {
        slot_seconds: 60,
        launches_per_slot: 2,
        default_time_zone: "America/Chicago".into(),
    })
    .unwrap();
    assert_eq!(ok.config.slot_seconds, 60);
    assert_eq!(ok.config.capacity_per_slot, 2);
    assert_eq!(ok.default_zone, chrono_tz::America::Chicago);
    assert_eq!(TenantGrid::from_wire(&ok.to_wire()).unwrap(), ok);
    for (slot, launches, zone) in [(0, 1, "UTC"), (75, 0, "UTC"), (75, 1, "Mars/Olympus")] {
        let wire = GridSettings {
            slot_seconds: slot,
            launches_per_slot: launches,
            default_time_zone: zone.into(),
        };
        assert!(TenantGrid::from_wire(&wire).is_err(), "{wire:?}");
    }
    let window = CompletionWindow::from_wire(&CompletionSettings {
        window_ms: 1_200_000,
        grace_ms: 60_000,
    })
    .unwrap();
    assert_eq!(window.total(), Duration::from_secs(21 * 60));
    assert!(CompletionWindow::from_wire(&CompletionSettings {
        window_ms: 0,
        grace_ms: 0
    })
    .is_err());
}

proptest! {
    /// Any valid wire window survives domain and back unchanged (days in order).
    #[test]
    fn valid_wire_windows_round_trip(
        rules in proptest::collection::vec(
            (proptest::collection::btree_set(1..=7i32, 1..=7), 0..1440i32, 1..=1440i32),
            1..4,
        )
    ) {
        let windows: Vec<WireWindow> = rules
            .into_iter()
            .map(|(days, start, end)| wire(days.into_iter().collect(), start, end))
            .collect();
        let domain = window_from_wire(&windows).unwrap();
        prop_assert_eq!(window_to_wire(&domain), windows);
    }

    /// Arbitrary wire values never panic the conversion.
    #[test]
    fn arbitrary_wire_windows_never_panic(
        days in proptest::collection::vec(any::<i32>(), 0..9),
        start in any::<i32>(),
        end in any::<i32>(),
    ) {
        let _ = window_from_wire(&[wire(days, start, end)]);
    }
}
