//! Each operator action end to end, on the real broker and a real Postgres: the API
//! answers 202 with a command id, the command reaches the processor that owns it
//! (contact, recovery, CRM dispatcher) or takes effect on the control topic,
//! `GET /v1/commands/{id}?wait=5s` reports `applied` (or `rejected` with its reason), and
//! the views show the effect within seconds. Every command ends with exactly one outcome
//! in the audit view, however many processors read it (the ignores above all).

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use callstream_domain::ids::completion_case::missing_exception as missing_exception_id;
use callstream_schemas::ExceptionType;
use chrono::{SubsecRound, Utc};
use serde_json::{json, Value};
use support::operator::action::{applied, jobs_of, run, shows, Action, Shows, SOON};
use support::operator::{eventually, seed, sims, Stack};
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_operator_action_takes_effect_end_to_end() -> Result<()> {
    let started = Instant::now();
    let s = Stack::start().await?;

    // What upstream services would have sent: the campaign's settings, six contacts
    // entered (one of them may not be called), four accepted launches (one call that an
    // answering machine soon takes, three still ringing) and two exceptions of services
    // that keep no case for them.
    s.produce(seed::every_day()).await?;
    // Sent while the CRM is down: it fails for good and a crm_failed exception opens.
    s.produce(seed::crm_note("c-note")).await?;
    let contacts = ["c-retry", "c-later", "c-cancel", "c-finish", "c-hold"];
    for contact in contacts {
        s.produce(seed::launch_request(contact, false)).await?;
    }
    s.produce(seed::launch_request("c-dnc", true)).await?;
    s.sim.set_behaviour(sims::quick_voicemail())?;
    let mut sids = vec![s.place_call().await?];
    s.sim.set_behaviour(sims::ringing())?;
    for _ in 0..3 {
        sids.push(s.place_call().await?);
    }
    let mut launch = HashMap::new();
    for (name, sid) in ["c-l-rec", "c-l-vm", "c-l-na", "c-l-ign"]
        .into_iter()
        .zip(&sids)
    {
        launch.insert(name, Uuid::new_v4());
        s.produce(seed::accepted(name, launch[name], sid)).await?;
    }
    let crm = seed::opened("c-crm", ExceptionType::CrmFailed, "crm-dispatcher");
    let no_slot = seed::opened("c-slot", ExceptionType::NoSlot, "scheduler");
    s.produce(crm.clone()).await?;
    s.produce(no_slot.clone()).await?;

    // Each entered contact has its planned job in the view.
    let mut job = HashMap::new();
    for contact in contacts {
        let found = eventually(contact, SOON, || async {
            Ok(jobs_of(&s, contact).await?.first().cloned())
        })
        .await?;
        let id: Uuid = serde_json::from_value(found["job_id"].clone())?;
        job.insert(contact, id);
    }
    // c-hold's call: due, launched, answered by a lead asking for a person (a gateway
    // event: raw Twilio status, outcome unknown), which opens an urgent exception and holds
    // the contact's calls.
    s.produce(seed::launch_due("c-hold", job["c-hold"])).await?;
    let hold_launch: Uuid = eventually("c-hold launched", SOON, || async {
        let jobs = jobs_of(&s, "c-hold").await?;
        Ok(jobs
            .first()
            .and_then(|j| serde_json::from_value(j["launch_id"].clone()).ok()))
    })
    .await?;
    s.produce(seed::gateway_answered("c-hold", hold_launch))
        .await?;
    let hold: Value = eventually("c-hold held", SOON, || async {
        let open = s.get("/v1/exceptions?status=open").await?;
        let items = open["items"].as_array().cloned().unwrap_or_default();
        Ok(items
            .into_iter()
            .find(|e| e["contact_id"] == "c-hold" && e["exception_type"] == "urgent_request"))
    })
    .await?;
    ensure!(hold["launch_id"] == json!(hold_launch), "{hold}");
    let hold: Uuid = serde_json::from_value(hold["exception_id"].clone())?;
    // The gateway event completed c-hold's job in the view (the shared outcome rule).
    eventually("c-hold's job completed", SOON, || async {
        let jobs = jobs_of(&s, "c-hold").await?;
        Ok(jobs
            .iter()
            .any(|j| j["state"] == "completed" && j["outcome"] == "answered")
            .then_some(()))
    })
    .await?;
    // Every launch's completion goes missing after the one-second window, and recovery's
    // lookup finds each call still ringing: four open cases, each showing its lookups (the
    // console's recovery attempts) and what the latest found.
    eventually(
        "four missing completions with their lookups",
        SOON,
        || async {
            let missing = s.get("/v1/launches/missing").await?;
            let items = missing["items"].as_array().cloned().unwrap_or_default();
            let looked = items.iter().all(|m| {
                m["recovery_attempts"].as_i64() >= Some(1)
                    && m["last_lookup"]
                        .as_str()
                        .is_some_and(|l| l.starts_with("lookup ") && l.contains("the call is"))
                    && m["last_lookup_at"].is_string()
            });
            Ok((items.len() == 4 && looked).then_some(()))
        },
    )
    .await?;
    eventually("the first call over", SOON, || async {
        Ok((s.call_status(&sids[0]).await? == "completed").then_some(()))
    })
    .await?;
    let crm_failed: Uuid = eventually("the CRM note failed for good", SOON, || async {
        let open = s.get("/v1/exceptions?status=open").await?;
        let items = open["items"].as_array().cloned().unwrap_or_default();
        let found = items
            .into_iter()
            .find(|e| e["contact_id"] == "c-note" && e["exception_type"] == "crm_failed");
        Ok(found.and_then(|e| serde_json::from_value(e["exception_id"].clone()).ok()))
    })
    .await?;
    println!("seeded in {:?}", started.elapsed());

    let (op, admin) = (s.operator.clone(), s.admin.clone());
    let later = (Utc::now() + chrono::Duration::days(1)).trunc_subsecs(0);
    let action = |name, uri: String, token: &String, body, outcome, shows| Action {
        name,
        uri,
        token: token.clone(),
        body,
        outcome,
        shows,
    };
    let mut actions = vec![
        action(
            "retry now",
            "/v1/contacts/c-retry/retry-now".into(),
            &op,
            json!({"job_id": job["c-retry"], "reason": "lead asked"}),
            applied(),
            Shows::Job(
                "c-retry",
                vec![
                    ("origin", json!("operator_retry")),
                    ("replaces_job_id", json!(job["c-retry"])),
                ],
            ),
        ),
        action(
            "retry later",
            "/v1/contacts/c-later/retry-later".into(),
            &op,
            json!({"at": later}),
            applied(),
            Shows::Job(
                "c-later",
                vec![
                    ("origin", json!("operator_retry")),
                    ("requested_at", json!(later)),
                ],
            ),
        ),
        action(
            "retry a do-not-call lead",
            "/v1/contacts/c-dnc/retry-now".into(),
            &op,
            json!({"campaign_id": seed::CAMPAIGN}),
            ("rejected", Some("do_not_call")),
            Shows::NoJob("c-dnc"),
        ),
        action(
            "cancel future jobs",
            "/v1/contacts/c-cancel/cancel-future-jobs".into(),
            &op,
            json!({"reason": "lead called in"}),
            applied(),
            Shows::Job(
                "c-cancel",
                vec![
                    ("state", json!("cancelled")),
                    ("reason", json!("operator_cancelled")),
                ],
            ),
        ),
        action(
            "force finish",
            "/v1/contacts/c-finish/force-finish".into(),
            &op,
            json!({}),
            applied(),
            Shows::Job(
                "c-finish",
                vec![
                    ("state", json!("cancelled")),
                    ("reason", json!("operator_finished")),
                ],
            ),
        ),
        action(
            "recover",
            format!("/v1/launches/{}/recover", launch["c-l-rec"]),
            &op,
            json!({}),
            applied(),
            Shows::Resolved("c-l-rec", launch["c-l-rec"], "recovered"),
        ),
        action(
            "advance as voicemail",
            format!("/v1/launches/{}/advance", launch["c-l-vm"]),
            &op,
            json!({"as": "voicemail"}),
            applied(),
            Shows::Resolved("c-l-vm", launch["c-l-vm"], "advanced_voicemail"),
        ),
        action(
            "advance as no-answer",
            format!("/v1/launches/{}/advance", launch["c-l-na"]),
            &op,
            json!({"as": "no_answer"}),
            applied(),
            Shows::Resolved("c-l-na", launch["c-l-na"], "advanced_no_answer"),
        ),
        action(
            "recover a closed case",
            format!("/v1/launches/{}/recover", launch["c-l-na"]),
            &op,
            json!({}),
            ("rejected", Some("no_open_case")),
            Shows::Resolved("c-l-na", launch["c-l-na"], "advanced_no_answer"),
        ),
    ];
    for (path, setting, campaign) in [
        ("system-pause", "system_pause", ""),
        ("campaigns/camp-x/pause", "campaign_pause", "camp-x"),
        ("shadow-mode", "shadow_mode", ""),
        ("crm-writes", "crm_writes", ""),
    ] {
        for enabled in [true, false] {
            actions.push(action(
                setting,
                format!("/v1/control/{path}"),
                &admin,
                json!({"enabled": enabled, "reason": "e2e"}),
                applied(),
                Shows::Control(setting, campaign, enabled),
            ));
        }
    }

    // The CRM is back by now (or soon): the kept command can run again.
    actions.push(action(
        "retry a failed CRM command",
        format!("/v1/exceptions/{crm_failed}/retry"),
        &op,
        json!({"reason": "CRM is back"}),
        applied(),
        Shows::Exception(crm_failed, "resolved"),
    ));
    let ignores = [
        (
            "ignore a missing completion",
            missing_exception_id(&launch["c-l-ign"]),
        ),
        ("ignore the contact's hold", hold),
        ("ignore a CRM failure", crm.exception_id),
        ("ignore no slot", no_slot.exception_id),
    ];
    for (name, exception) in ignores {
        actions.push(action(
            name,
            format!("/v1/exceptions/{exception}/ignore"),
            &op,
            json!({"reason": "handled"}),
            applied(),
            Shows::Exception(exception, "ignored"),
        ));
    }
    let mut sent = Vec::new();
    for a in &actions {
        if a.uri.ends_with("/retry") {
            tokio::time::sleep_until(s.crm_back_at.into()).await;
        }
        let id = run(&s, a).await?;
        if !a.uri.starts_with("/v1/control") {
            sent.push((a.name, id));
        }
    }
    // The ignored case closed its launch too.
    ensure!(
        shows(
            &s,
            &Shows::Resolved("c-l-ign", launch["c-l-ign"], "ignored")
        )
        .await?
    );

    // Exactly one outcome per command, whichever processors read it: give a second
    // judge time to write, then count.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for (name, id) in sent {
        let outcomes: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM audit WHERE tenant_id = $1 AND command_id = $2
             AND result IN ('applied', 'rejected')",
        )
        .bind(seed::TENANT)
        .bind(id)
        .fetch_one(&s.views.db.pool)
        .await?;
        ensure!(outcomes == 1, "{name}: {outcomes} outcomes audited");
    }
    s.stop()?;
    println!("whole run {:?}", started.elapsed());
    Ok(())
}
