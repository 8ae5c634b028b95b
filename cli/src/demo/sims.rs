//! The simulators' side of the run: their counters (`GET /_sim/stats`) and
//! the voice platform's calls (`GET /_sim/calls`), which are the outside
//! world's own account of what callstream did to it,
//! and the faults the demo injects while the run goes on (a CRM outage, a
//! campaign paused and resumed by an operator).

use std::time::Duration;

use anyhow::{Context, Result};
use callstream_control::ControlFile;
use serde_json::{json, Value};

use std::sync::{Arc, Mutex};

use super::promises::PauseWindow;
use super::setup::{apply_control, Run};

/// Both simulators' counters, as they answered, and the voice platform's
/// list of calls (`/_sim/calls`: launch id, dropped completion, lost call).
#[derive(Debug, Clone, Default)]
pub struct SimStats {
    pub voice: Value,
    pub crm: Value,
    pub calls: Value,
}

/// A whole-number counter of a stats document (0 when absent).
pub fn count(stats: &Value, field: &str) -> u64 {
    stats.get(field).and_then(Value::as_u64).unwrap_or(0)
}

/// A map of counters of a stats document (empty when absent).
pub fn counts(stats: &Value, field: &str) -> Vec<(String, u64)> {
    stats
        .get(field)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

async fn get(http: &reqwest::Client, url: &str) -> Result<Value> {
    http.get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .with_context(|| format!("GET {url}"))?
        .json()
        .await
        .with_context(|| format!("reading {url}"))
}

/// Reads both simulators' stats and the voice platform's calls.
pub async fn stats(run: &Run) -> Result<SimStats> {
    let http = client()?;
    Ok(SimStats {
        voice: get(&http, &format!("{}/_sim/stats", run.voice_url)).await?,
        crm: get(&http, &format!("{}/_sim/stats", run.crm_url)).await?,
        calls: get(&http, &format!("{}/_sim/calls", run.voice_url)).await?,
    })
}

fn client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .context("building the HTTP client")
}

/// Asks the CRM simulator for an outage of `seconds`, starting `after` from now.
pub async fn crm_outage(run: &Run, after: Duration, seconds: Duration) -> Result<()> {
    client()?
        .post(format!("{}/_sim/outage", run.crm_url))
        .json(&json!({
            "seconds": seconds.as_secs_f64(),
            "after_seconds": after.as_secs_f64(),
        }))
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .context("scheduling the CRM outage")?;
    Ok(())
}

/// `file` with `campaign` of every tenant that has it paused.
pub fn with_campaign_paused(file: &ControlFile, campaign: &str) -> ControlFile {
    let mut paused = file.clone();
    for tenant in paused.tenants.values_mut() {
        if let Some(c) = tenant.campaigns.get_mut(campaign) {
            c.paused = true;
        }
    }
    paused
}

/// An operator pauses `campaign` after `after` and resumes it `length`
/// later, through the control topic as `callstream control apply` would.
/// Pauses `campaign` after `after` for `length`, as an operator would, and
/// records when it was paused (from the moment the pause was written until
/// the resume was) in `windows`, for the no-call-while-paused promise.
pub async fn pause_campaign(
    run: Run,
    campaign: String,
    after: Duration,
    length: Duration,
    windows: Arc<Mutex<Vec<PauseWindow>>>,
) {
    tokio::time::sleep(after).await;
    let paused = with_campaign_paused(&run.control, &campaign);
    let reason = format!("demo: {campaign} paused for {}s", length.as_secs());
    if let Err(e) = apply_control(&run, &paused, &reason).await {
        eprintln!("demo: pausing {campaign} failed: {e:#}");
        return;
    }
    let from_ms = callstream_platform::clock::now_utc().timestamp_millis();
    let record = |to_ms| {
        if let Ok(mut w) = windows.lock() {
            w.retain(|p: &PauseWindow| p.from_ms != from_ms);
            w.push(PauseWindow {
                campaign: campaign.clone(),
                from_ms,
                to_ms,
            });
        }
    };
    // Until the resume is written, the pause covers the rest of the run.
    record(i64::MAX);
    println!(
        "demo: operator paused campaign {campaign} for {}s",
        length.as_secs()
    );
    tokio::time::sleep(length).await;
    // Calls may leave again from the moment the resume is written.
    record(callstream_platform::clock::now_utc().timestamp_millis());
    match apply_control(&run, &run.control, "demo: pause over").await {
        Ok(_) => println!("demo: operator resumed campaign {campaign}"),
        Err(e) => eprintln!("demo: resuming {campaign} failed: {e:#}"),
    }
}

/// A launch request for every contact of `launches` whose call in `calls`
/// ended with the lead saying "stop", its CRM record saying they may be called.
fn contradicting(
    calls: &Value,
    default_tenant: &str,
    launches: Vec<callstream_workload::Launch>,
) -> Vec<callstream_workload::Launch> {
    // By tenant and contact: two tenants' contacts with one id are different leads.
    let opted_out = super::promises::stopped_leads(calls, default_tenant);
    let mut seen = std::collections::HashSet::new();
    launches
        .into_iter()
        .filter(|l| {
            let key = (l.tenant.clone(), l.contact_id.clone());
            opted_out.contains(&key) && seen.insert(key)
        })
        .map(|mut l| {
            l.request_id = format!("{}-crm-says-callable", l.request_id);
            l.campaign_id = "reengage".into();
            l.reason = "the CRM's record says the lead may be called".into();
            l.contact.do_not_call = false;
            // Sent now, whenever the lead first arrived.
            l.send_at_ms = 0;
            l
        })
        .collect()
}

/// After `delay`, the CRM sends a launch request for every lead who said
/// "stop" in a call the platform reported, its record saying `do_not_call:
/// false` (a CRM that never heard of the opt-out). Returns how many it sent.
pub async fn crm_contradicts_opt_outs(
    run: Run,
    settings: callstream_workload::SendSettings,
    launches: Vec<callstream_workload::Launch>,
    delay: Duration,
) -> Result<usize> {
    tokio::time::sleep(delay).await;
    let calls = get(&client()?, &format!("{}/_sim/calls", run.voice_url)).await?;
    let again = contradicting(&calls, &run.first_tenant(), launches);
    let plan = callstream_workload::Plan { launches: again };
    let report = callstream_workload::send(&plan, &settings).await?;
    Ok(report.accepted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_default_to_zero_and_maps_to_empty() {
        let stats = json!({"calls_created": 7, "outcomes": {"completed": 5, "busy": 2}});
        assert_eq!(count(&stats, "calls_created"), 7);
        assert_eq!(count(&stats, "absent"), 0);
        assert_eq!(
            counts(&stats, "outcomes"),
            vec![("busy".to_string(), 2), ("completed".to_string(), 5)]
        );
        assert!(counts(&stats, "absent").is_empty());
    }

    #[test]
    fn the_crm_contradicts_only_the_lead_who_said_stop_in_a_delivered_call() {
        // acme and bolt both have a contact c-1; only acme's c-1 said stop in a call whose
        // result was delivered; bolt's c-2 said it in a call whose completion was dropped.
        let call = |tenant: &str, contact: &str, intent: &str, dropped: bool| {
            json!({"tenant": tenant, "contact_id": contact, "intent": intent,
                   "completion_dropped": dropped, "created_at_ms": 1, "ended_at_ms": 2})
        };
        let calls = json!({"calls": [
            call("acme", "c-1", "do_not_call", false),
            call("bolt", "c-1", "interested", false),
            call("bolt", "c-2", "do_not_call", true),
        ]});
        let plan = callstream_workload::plan(&callstream_workload::PlanSettings {
            contacts: 6,
            campaigns: vec!["spring-intake".into()],
            tenants: vec!["acme".into(), "bolt".into()],
            id_prefix: "x".into(),
            seed: 1,
        });
        let launches: Vec<_> = plan
            .launches
            .into_iter()
            .map(|mut l| {
                l.contact_id = l.contact_id.trim_start_matches("x-").to_owned();
                l.send_at_ms = 9;
                l
            })
            .collect();
        let again = contradicting(&calls, "acme", launches);
        let who: Vec<_> = again
            .iter()
            .map(|l| (l.tenant.as_str(), l.contact_id.as_str()))
            .collect();
        assert_eq!(who, [("acme", "c-1")]);
        assert!(!again[0].contact.do_not_call);
        assert_eq!(again[0].send_at_ms, 0, "sent at once");
    }

    #[test]
    fn pausing_touches_only_the_named_campaign() {
        let file = ControlFile::parse(
            "[tenants.t.campaigns.a]\n[tenants.t.campaigns.b]\n[tenants.u.campaigns.a]\n",
        )
        .unwrap();
        let paused = with_campaign_paused(&file, "a");
        assert!(paused.tenants["t"].campaigns["a"].paused);
        assert!(paused.tenants["u"].campaigns["a"].paused);
        assert!(!paused.tenants["t"].campaigns["b"].paused);
        assert_eq!(paused.tenants["t"].grid, file.tenants["t"].grid);
    }
}
