//! The simulators the processors talk to, served on loopback ports of their own: the
//! voice platform (recovery looks calls up there) and the CRM (the CRM dispatcher writes
//! there). Both are the project's own simulators, the same ones the demo runs.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use callstream_sim_crm::{CrmBehaviour, CrmState, SimCrmConfig};
use callstream_sim_voice::{serve_state, Behaviour, SimState, SimVoiceConfig};
use tokio::net::TcpListener;

pub const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
pub const AUTH_TOKEN: &str = "actions-e2e-token";
pub const CRM_TOKEN: &str = "pat-na1-actions-e2e";

/// Calls ring for an hour unless a test changes the behaviour: a call looked up is still
/// in progress, so its missing-completion case stays open for the operator.
pub fn ringing() -> Behaviour {
    Behaviour {
        weight_human: 0.0,
        weight_voicemail: 0.0,
        weight_no_answer: 1.0,
        weight_busy: 0.0,
        weight_failed: 0.0,
        ring_secs_min: 3600.0,
        ring_secs_max: 3600.0,
        no_answer_secs: 3600.0,
        ..Behaviour::default()
    }
}

/// Calls an answering machine takes after 3 s, done 2 s later.
pub fn quick_voicemail() -> Behaviour {
    Behaviour {
        weight_human: 0.0,
        weight_voicemail: 1.0,
        weight_no_answer: 0.0,
        weight_busy: 0.0,
        weight_failed: 0.0,
        ring_secs_min: 3.0,
        ring_secs_max: 3.0,
        voicemail_secs_min: 2.0,
        voicemail_secs_max: 2.0,
        ..Behaviour::default()
    }
}

pub async fn voice_simulator() -> Result<(SimState, String)> {
    let config = SimVoiceConfig {
        account_sid: ACCOUNT.into(),
        auth_token: AUTH_TOKEN.into(),
        seed: 11,
        behaviour: ringing(),
        ..SimVoiceConfig::default()
    };
    let sim = SimState::new(&config).context("voice simulator config")?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let served = sim.clone();
    tokio::spawn(async move { serve_state(served, listener, std::future::pending()).await });
    Ok((sim, base))
}

/// The CRM simulator, refusing every request (503) for `outage` from now: a CRM command
/// sent meanwhile fails for good, leaving a `crm_failed` exception to retry.
pub async fn crm_simulator(outage: Duration) -> Result<(CrmState, String)> {
    let config = SimCrmConfig {
        tokens: vec![CRM_TOKEN.into()],
        seed: 7,
        behaviour: CrmBehaviour::default().with_instant_search(),
        ..SimCrmConfig::default()
    };
    let crm = CrmState::new(&config).context("CRM simulator config")?;
    crm.set_outage(Instant::now(), outage);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let app = callstream_sim_crm::app(crm.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((crm, base))
}
