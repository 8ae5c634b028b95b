//! The simulators' side of the run: their counters (`GET /_sim/stats`) and
//! the voice platform's calls (`GET /_sim/calls`), which are the outside
//! world's own account of what callstream did to it,
//! and the faults the demo injects while the run goes on (a CRM outage, a
//! campaign paused and resumed by an operator).

use std::time::Duration;

use anyhow::{Context, Result};
use callstream_control::ControlFile;
use serde_json::{json, Value};

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
pub async fn pause_campaign(run: Run, campaign: String, after: Duration, length: Duration) {
    tokio::time::sleep(after).await;
    let paused = with_campaign_paused(&run.control, &campaign);
    let reason = format!("demo: {campaign} paused for {}s", length.as_secs());
    if let Err(e) = apply_control(&run, &paused, &reason).await {
        eprintln!("demo: pausing {campaign} failed: {e:#}");
        return;
    }
    println!(
        "demo: operator paused campaign {campaign} for {}s",
        length.as_secs()
    );
    tokio::time::sleep(length).await;
    match apply_control(&run, &run.control, "demo: pause over").await {
        Ok(_) => println!("demo: operator resumed campaign {campaign}"),
        Err(e) => eprintln!("demo: resuming {campaign} failed: {e:#}"),
    }
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
