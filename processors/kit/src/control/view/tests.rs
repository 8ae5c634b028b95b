use super::*;
use callstream_e2e::fixtures;
use callstream_schemas::{Actor, CampaignSettings, CompletionSettings, GridSettings};

use crate::control::settings::DEFAULT_ZONE;

fn change(
    tenant: &str,
    setting: ControlSetting,
    campaign: Option<&str>,
    value: ControlValue,
) -> ControlChange {
    let at = chrono::DateTime::from_timestamp_millis(1_700_000_000_000).unwrap();
    fixtures::control_change(
        tenant,
        setting,
        campaign,
        value,
        Actor::operator("test"),
        at,
    )
}

fn flag(on: bool) -> ControlValue {
    ControlValue {
        enabled: Some(on),
        ..ControlValue::default()
    }
}

fn campaign_value(max_attempts: i32) -> ControlValue {
    ControlValue {
        campaign: Some(CampaignSettings {
            windows: vec![callstream_schemas::CallingWindow {
                days_of_week: vec![6],
                start_minute: 600,
                end_minute: 840,
            }],
            retry_delays_minutes: vec![30],
            max_attempts,
            next_campaign_id: None,
            move_buffer_minutes: 5,
        }),
        ..ControlValue::default()
    }
}

fn snapshot(changes: &[ControlChange]) -> ControlSnapshot {
    changes
        .iter()
        .map(|c| (c.record_key().into_bytes(), c.encode().unwrap()))
        .collect()
}

#[test]
fn absent_settings_read_as_the_built_in_defaults() {
    let table = ControlTable::new("control");
    let empty = ControlSnapshot::default();
    let view = table.view_of(&empty);
    assert!(!view.system_paused("acme"));
    assert_eq!(view.pause("acme", "enrol"), None);
    assert!(!view.shadow_mode("acme"));
    assert!(view.crm_writes("acme"));
    assert_eq!(*view.campaign("acme", "enrol"), CampaignConfig::builtin());
    assert_eq!(view.grid("acme"), TenantGrid::builtin());
    assert_eq!(view.grid("acme").default_zone, DEFAULT_ZONE);
    assert_eq!(
        view.completion_window("acme", Some("enrol")),
        CompletionWindow::builtin()
    );
}

#[test]
fn settings_are_per_tenant_and_per_campaign() {
    let table = ControlTable::new("control");
    let snap = snapshot(&[
        change("acme", ControlSetting::SystemPause, None, flag(true)),
        change("acme", ControlSetting::ShadowMode, None, flag(true)),
        change("acme", ControlSetting::CrmWrites, None, flag(false)),
        change(
            "beta",
            ControlSetting::CampaignPause,
            Some("enrol"),
            flag(true),
        ),
        change(
            "beta",
            ControlSetting::CampaignSettings,
            Some("enrol"),
            campaign_value(7),
        ),
        change(
            "beta",
            ControlSetting::CampaignSettings,
            None,
            campaign_value(2),
        ),
        change(
            "beta",
            ControlSetting::GridSettings,
            None,
            ControlValue {
                grid: Some(GridSettings {
                    slot_seconds: 30,
                    launches_per_slot: 3,
                    default_time_zone: "America/Denver".into(),
                }),
                ..ControlValue::default()
            },
        ),
        change(
            "beta",
            ControlSetting::CompletionWindow,
            Some("enrol"),
            ControlValue {
                completion: Some(CompletionSettings {
                    window_ms: 600_000,
                    grace_ms: 0,
                }),
                ..ControlValue::default()
            },
        ),
    ]);
    let view = table.view_of(&snap);
    assert_eq!(view.pause("acme", "enrol"), Some(Pause::System));
    assert!(view.shadow_mode("acme") && !view.crm_writes("acme"));
    assert_eq!(view.pause("beta", "enrol"), Some(Pause::Campaign));
    assert_eq!(view.pause("beta", "other"), None);
    assert!(!view.shadow_mode("beta") && view.crm_writes("beta"));

    let own = view.campaign("beta", "enrol");
    assert_eq!((own.policy.max_attempts, own.origin), (7, Origin::Set));
    let defaulted = view.campaign("beta", "other");
    assert_eq!(
        (defaulted.policy.max_attempts, defaulted.origin),
        (2, Origin::TenantDefault)
    );
    assert_eq!(view.campaign("acme", "enrol").origin, Origin::BuiltIn);

    let grid = view.grid("beta");
    assert_eq!(
        (grid.config.slot_seconds, grid.config.capacity_per_slot),
        (30, 3)
    );
    assert_eq!(grid.default_zone, chrono_tz::America::Denver);
    assert_eq!(view.grid("acme"), TenantGrid::builtin());

    let window = view.completion_window("beta", Some("enrol"));
    assert_eq!(window.window, std::time::Duration::from_secs(600));
    assert_eq!(
        view.completion_window("beta", Some("other")),
        CompletionWindow::builtin()
    );
}

#[test]
fn the_all_tenants_switch_pauses_everyone() {
    let table = ControlTable::new("control");
    let snap = snapshot(&[change(
        ALL_TENANTS,
        ControlSetting::SystemPause,
        None,
        flag(true),
    )]);
    let view = table.view_of(&snap);
    assert!(view.system_paused("acme") && view.system_paused("beta"));
}

#[test]
fn unusable_values_read_as_the_safe_choice() {
    let table = ControlTable::new("control");
    let mut snap = ControlSnapshot::default();
    for setting in [
        ControlSetting::SystemPause,
        ControlSetting::ShadowMode,
        ControlSetting::CrmWrites,
    ] {
        snap.apply(
            format!("acme/{setting}").into_bytes(),
            Some(b"not avro".to_vec()),
        );
    }
    snap.apply(
        b"acme/campaign_pause/c".to_vec(),
        Some(vec![0xC3, 0x01, 0, 0]),
    );
    // Decodes, but a campaign value with no windows is unusable.
    let mut broken = campaign_value(3);
    if let Some(c) = broken.campaign.as_mut() {
        c.windows.clear();
    }
    let bad = change("acme", ControlSetting::CampaignSettings, Some("c"), broken);
    snap.apply(bad.record_key().into_bytes(), Some(bad.encode().unwrap()));
    let view = table.view_of(&snap);
    assert!(view.system_paused("acme"));
    assert!(view.campaign_paused("acme", "c"));
    assert!(view.shadow_mode("acme"));
    assert!(!view.crm_writes("acme"));
    assert_eq!(view.campaign("acme", "c").origin, Origin::BuiltIn);
    // The change itself is still there to look at.
    let key = SettingKey::new("acme", ControlSetting::CampaignSettings, Some("c"));
    assert_eq!(view.change(&key).map(|c| c.event_id), Some(bad.event_id));
}

#[test]
fn a_value_is_decoded_once_per_distinct_bytes_and_a_change_is_seen_at_once() {
    let table = ControlTable::new("control");
    let mut snap = snapshot(&[change(
        "acme",
        ControlSetting::SystemPause,
        None,
        flag(true),
    )]);
    for _ in 0..1000 {
        assert!(table.view_of(&snap).system_paused("acme"));
    }
    // The pause key plus the all-tenants key (absent: never decoded).
    assert_eq!(table.decoded_values(), 1);
    let lifted = change("acme", ControlSetting::SystemPause, None, flag(false));
    snap.apply(
        lifted.record_key().into_bytes(),
        Some(lifted.encode().unwrap()),
    );
    assert!(!table.view_of(&snap).system_paused("acme"));
    assert_eq!(table.decoded_values(), 2);
    // A tombstone deletes the setting: back to the default.
    snap.apply(lifted.record_key().into_bytes(), None);
    assert!(!table.view_of(&snap).system_paused("acme"));
    assert_eq!(table.decoded_values(), 2);
}

#[test]
fn the_view_reads_the_runtime_context_and_follows_changes() {
    use callstream_runtime::{
        Input, Output, ProcessError, Processor, ProcessorSpec, Record, TestDriver,
    };

    struct Holder {
        control: ControlTable,
    }
    impl Processor for Holder {
        fn process(
            &mut self,
            ctx: &mut callstream_runtime::Context<'_>,
            record: &Record,
        ) -> Result<(), ProcessError> {
            let tenant =
                String::from_utf8_lossy(record.key.as_deref().unwrap_or_default()).into_owned();
            let pause = self.control.view(ctx).pause(&tenant, "enrol");
            let verdict = pause.map_or("go", Pause::reason);
            ctx.emit(Output::new("out", tenant, verdict));
            Ok(())
        }
    }
    let spec = ProcessorSpec::new("holder", "dlq")
        .input("in")
        .global_table("control");
    let mut driver = TestDriver::new(
        Holder {
            control: ControlTable::new("control"),
        },
        spec,
        2,
        0,
    );
    driver.pipe(Input::new("in", "acme", "x"));
    let paused = change(
        "acme",
        ControlSetting::CampaignPause,
        Some("enrol"),
        flag(true),
    );
    driver.set_global(
        "control",
        paused.record_key(),
        Some(paused.encode().unwrap()),
    );
    driver.pipe(Input::new("in", "acme", "x"));
    driver.pipe(Input::new("in", "beta", "x"));
    let values: Vec<_> = driver
        .records("out")
        .iter()
        .map(|p| String::from_utf8_lossy(p.value.as_deref().unwrap_or_default()).into_owned())
        .collect();
    assert_eq!(values, ["go", "campaign_paused", "go"]);
}

#[test]
fn keys_are_the_schema_crate_record_keys() {
    let c = change(
        "acme",
        ControlSetting::CampaignSettings,
        Some("enrol"),
        campaign_value(3),
    );
    assert_eq!(SettingKey::of(&c).record_key(), c.record_key());
    let c = change("acme", ControlSetting::CrmWrites, None, flag(true));
    assert_eq!(SettingKey::of(&c).record_key(), c.record_key());
}

fn rules_value(cap_subject: &str, default_state: Option<&str>) -> ControlValue {
    ControlValue {
        calling_rules: Some(Box::new(callstream_schemas::CallingRules {
            rules: vec![],
            overrides: vec![],
            cap_subject: cap_subject.into(),
            default_state: default_state.map(str::to_owned),
        })),
        ..ControlValue::default()
    }
}

/// A campaign's calling rules replace the tenant's for its calls; an unusable one falls
/// back to the tenant's; with none anywhere, the statutory rules alone apply.
#[test]
fn calling_rules_are_the_campaigns_else_the_tenants() {
    use crate::calling_rules::CapSubject;
    let table = ControlTable::new("control");
    let snap = snapshot(&[
        change(
            "acme",
            ControlSetting::CallingRules,
            None,
            rules_value("campaign", Some("il")),
        ),
        change(
            "acme",
            ControlSetting::CallingRules,
            Some("collections"),
            rules_value("tenant", None),
        ),
        change(
            "acme",
            ControlSetting::CallingRules,
            Some("broken"),
            rules_value("contact", None),
        ),
    ]);
    let view = table.view_of(&snap);
    let tenant = view.calling_rules("acme", "enrol");
    assert_eq!(
        (tenant.cap_subject, tenant.default_state.as_deref()),
        (CapSubject::Campaign, Some("IL"))
    );
    let collections = view.calling_rules("acme", "collections");
    assert_eq!(
        (
            collections.cap_subject,
            collections.default_state.as_deref()
        ),
        (CapSubject::Tenant, None)
    );
    assert_eq!(
        view.calling_rules("acme", "broken")
            .default_state
            .as_deref(),
        Some("IL")
    );
    assert_eq!(view.calling_rules("globex", "enrol").default_state, None);
}
