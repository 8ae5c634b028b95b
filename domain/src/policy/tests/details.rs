//! What the branch table cannot show: CRM payloads and keys, follow-up
//! rules, the backoff curve, config parsing and validation, reasons.

use super::*;

#[test]
fn crm_commands_carry_summary_follow_up_and_deterministic_keys() {
    let analysis = CallAnalysis {
        interested: Some(true),
        summary: Some("Wants the evening course.".into()),
        ..Default::default()
    };
    let steps = decide(&policy(), &input(Outcome::Answered, &analysis)).unwrap();
    let crm: Vec<&CrmCommand> = steps
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Crm(c) => Some(c),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = crm.iter().map(|c| c.action.name()).collect();
    assert_eq!(
        names,
        [
            "log_call",
            "add_note",
            "update_last_outcome",
            "create_follow_up_task"
        ]
    );
    for c in &crm {
        assert_eq!(
            c.idempotency_key,
            idempotency_key("t1", "CA123", c.action.name())
        );
        assert_eq!((c.contact_id.as_str(), c.call_id.as_str()), ("c1", "CA123"));
    }
    assert_eq!(
        crm[1].action,
        CrmAction::AddNote {
            summary: "Wants the evening course.".into()
        }
    );
    match &crm[3].action {
        CrmAction::CreateFollowUpTask { due_at, .. } => {
            assert_eq!(*due_at, now() + Duration::days(1))
        }
        other => panic!("expected a follow-up task, got {other:?}"),
    }
    // A replay yields exactly the same decisions, keys included.
    assert_eq!(
        decide(&policy(), &input(Outcome::Answered, &analysis)).unwrap(),
        steps
    );
}

#[test]
fn follow_up_tasks_follow_the_policy() {
    let interested = CallAnalysis {
        interested: Some(true),
        ..Default::default()
    };
    let lukewarm = CallAnalysis::default();
    let cases = [
        (FollowUpTask::Never, Outcome::Answered, &interested, false),
        (
            FollowUpTask::WhenInterested,
            Outcome::Answered,
            &interested,
            true,
        ),
        (
            FollowUpTask::WhenInterested,
            Outcome::Answered,
            &lukewarm,
            false,
        ),
        (
            FollowUpTask::WhenInterested,
            Outcome::Voicemail,
            &interested,
            false,
        ),
        (
            FollowUpTask::WhenAnswered,
            Outcome::Answered,
            &lukewarm,
            true,
        ),
        (
            FollowUpTask::WhenAnswered,
            Outcome::NoAnswer,
            &lukewarm,
            false,
        ),
    ];
    for (follow_up_task, outcome, analysis, expected) in cases {
        let policy = CampaignPolicy {
            follow_up_task,
            ..policy()
        };
        let steps = decide(&policy, &input(outcome, analysis)).unwrap();
        let has_task = summary(&steps.decisions).contains(&"crm create_follow_up_task".to_owned());
        assert_eq!(has_task, expected, "{follow_up_task:?} {outcome}");
        // A blank summary adds no note.
        assert!(!summary(&steps.decisions).contains(&"crm add_note".to_owned()));
    }
}

#[test]
fn idempotency_keys_are_uuid_v5_under_the_documented_namespace() {
    let derived = uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_URL,
        b"https://callstream.dev/ns/crm-command",
    );
    assert_eq!(CRM_COMMAND_NAMESPACE, derived);
    let key = idempotency_key("t1", "CA1", "log_call");
    assert_eq!(key.get_version_num(), 5);
    assert_eq!(key, idempotency_key("t1", "CA1", "log_call"));
    // Each part matters, and the parts cannot bleed into each other.
    for other in [
        idempotency_key("t2", "CA1", "log_call"),
        idempotency_key("t1", "CA2", "log_call"),
        idempotency_key("t1", "CA1", "add_note"),
        idempotency_key("t1C", "A1", "log_call"),
    ] {
        assert_ne!(key, other);
    }
}

#[test]
fn backoff_doubles_is_bounded_and_jitter_only_shortens() {
    let b = ProviderFailureBackoff {
        max_retries: 10,
        initial_seconds: 60,
        max_seconds: 600,
        jitter_percent: 50,
    };
    let cases = [
        (1, 0.0, 60),
        (2, 0.0, 120),
        (3, 0.0, 240),
        (4, 0.0, 480),
        (5, 0.0, 600),
        (40, 0.0, 600),
        (u32::MAX, 0.0, 600),
        (1, 0.5, 45),
        (4, 0.999, 241),
        (1, 7.0, 31),
        (1, -1.0, 60),
        (1, f64::NAN, 60),
    ];
    for (retry, jitter, expected) in cases {
        assert_eq!(
            b.delay_seconds(retry, jitter),
            expected,
            "retry {retry} jitter {jitter}"
        );
    }
    let full = ProviderFailureBackoff {
        jitter_percent: 100,
        ..b
    };
    assert_eq!(full.delay_seconds(1, 0.9999999), 1, "never zero");
}

#[test]
fn config_has_documented_defaults_and_validates() {
    let parsed: CampaignPolicy = serde_json::from_str("{}").unwrap();
    assert_eq!(parsed, CampaignPolicy::default());
    assert_eq!(parsed.no_answer_retry_minutes, vec![2880]);
    assert_eq!(parsed.call_me_later_minutes, 120);
    let custom: CampaignPolicy = serde_json::from_str(
        r#"{"max_attempts":5,"next_campaign":"b","follow_up_task":"when_answered","provider_failure":{"max_retries":1}}"#,
    )
    .unwrap();
    assert_eq!(custom.max_attempts, 5);
    assert_eq!(custom.provider_failure.max_retries, 1);
    assert_eq!(custom.provider_failure.initial_seconds, 60);
    assert!(serde_json::from_str::<CampaignPolicy>(r#"{"max_attempt":5}"#).is_err());

    use PolicyConfigError as E;
    let bad = [
        (
            CampaignPolicy {
                voicemail_retry_minutes: vec![],
                ..policy()
            },
            E::NoDelays("voicemail_retry_minutes"),
        ),
        (
            CampaignPolicy {
                busy_retry_minutes: vec![30, 0],
                ..policy()
            },
            E::ZeroDelay("busy_retry_minutes"),
        ),
        (
            CampaignPolicy {
                call_me_later_minutes: 0,
                ..policy()
            },
            E::ZeroDelay("call_me_later_minutes"),
        ),
        (
            CampaignPolicy {
                max_attempts: 0,
                ..policy()
            },
            E::ZeroMaxAttempts,
        ),
        (
            CampaignPolicy {
                next_campaign: Some(String::new()),
                ..policy()
            },
            E::EmptyNextCampaign,
        ),
        (
            CampaignPolicy {
                next_campaign: Some("intro".into()),
                ..policy()
            },
            E::NextCampaignIsItself,
        ),
        (
            CampaignPolicy {
                provider_failure: ProviderFailureBackoff {
                    initial_seconds: 0,
                    ..Default::default()
                },
                ..policy()
            },
            E::BadBackoff,
        ),
        (
            CampaignPolicy {
                provider_failure: ProviderFailureBackoff {
                    initial_seconds: 90,
                    max_seconds: 60,
                    ..Default::default()
                },
                ..policy()
            },
            E::BadBackoff,
        ),
        (
            CampaignPolicy {
                provider_failure: ProviderFailureBackoff {
                    jitter_percent: 101,
                    ..Default::default()
                },
                ..policy()
            },
            E::BadJitter,
        ),
    ];
    for (config, err) in bad {
        assert_eq!(config.validate("intro"), Err(err.clone()), "{err}");
    }
    assert_eq!(policy().validate("intro"), Ok(()));
}

#[test]
fn reasons_say_why_without_phone_numbers() {
    let analysis = CallAnalysis {
        callback: Some(CallbackRequest {
            requested_at: None,
            phrase: "x".repeat(500),
        }),
        ..Default::default()
    };
    let steps = decide(&policy(), &input(Outcome::Answered, &analysis)).unwrap();
    match &steps.decisions[0] {
        Decision::PlanCall(call) => {
            assert_eq!(call.reason.code, ReasonCode::CallbackTimeUnresolved);
            assert!(call.reason.detail.contains("calling back in 120 min"));
            assert!(call.reason.detail.len() < 200, "the phrase is clipped");
        }
        other => panic!("expected a planned callback, got {other:?}"),
    }
    assert!(CallOrigin::Callback.lead_requested() && CallOrigin::CallMeLater.lead_requested());
    assert!(!CallOrigin::VoicemailRetry.lead_requested());
}

#[test]
fn decisions_survive_a_serde_round_trip() {
    let analysis = CallAnalysis {
        wants_person: true,
        interested: Some(true),
        summary: Some("Asked for an advisor.".into()),
        callback: Some(CallbackRequest {
            requested_at: Some(now() + Duration::days(1)),
            phrase: "tomorrow at 3".into(),
        }),
        ..Default::default()
    };
    let steps = decide(&policy(), &input(Outcome::Answered, &analysis)).unwrap();
    let json = serde_json::to_value(&steps).unwrap();
    assert_eq!(json["decisions"][0]["decision"], "open_exception");
    assert_eq!(json["decisions"][2]["origin"], "callback");
    let back: NextSteps = serde_json::from_value(json).unwrap();
    assert_eq!(back, steps);
}
