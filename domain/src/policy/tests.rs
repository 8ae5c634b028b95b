//! Policy tests: every branch as a table of situations → decisions
//! (`branches`), and what a table cannot show (`details`): times, keys,
//! config and backoff. The helpers here are shared by both.

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;
use crate::workflow::WorkflowState as S;

pub(super) fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 10, 15, 0, 0).unwrap()
}

pub(super) fn policy() -> CampaignPolicy {
    CampaignPolicy {
        voicemail_retry_minutes: vec![2880, 4320],
        no_answer_retry_minutes: vec![1440],
        busy_retry_minutes: vec![30, 60],
        next_campaign: Some("reactivation".into()),
        ..CampaignPolicy::default()
    }
}

pub(super) fn input<'a>(outcome: Outcome, analysis: &'a CallAnalysis) -> PolicyInput<'a> {
    PolicyInput {
        tenant_id: "t1",
        contact_id: "c1",
        campaign_id: "intro",
        call_id: "CA123",
        outcome,
        analysis,
        flags: ContactFlags::default(),
        counters: Counters::default(),
        now: now(),
        jitter: 0.0,
    }
}

/// A short, readable form of each decision: times relative to `now()`.
pub(super) fn summary(decisions: &[Decision]) -> Vec<String> {
    let rel = |t: DateTime<Utc>| (t - now()).num_minutes();
    decisions
        .iter()
        .map(|d| match d {
            Decision::PlanCall(c) => format!(
                "plan {:?} {} +{}m{}",
                c.origin,
                c.campaign_id,
                rel(c.earliest),
                c.requested_at
                    .map_or(String::new(), |t| format!(" asked +{}m", rel(t)))
            ),
            Decision::MarkDoNotCall { .. } => "mark_dnc".into(),
            Decision::CancelFutureJobs { .. } => "cancel_future".into(),
            Decision::OpenException { kind, urgent, .. } => {
                format!("exception {kind:?} urgent={urgent}")
            }
            Decision::HoldCalls { .. } => "hold".into(),
            Decision::AdvanceCampaign { from, to, .. } => format!("advance {from}->{to}"),
            Decision::Finish { reason } => format!("finish {:?}", reason.code),
            Decision::Crm(c) => format!("crm {}", c.action.name()),
        })
        .collect()
}

mod branches;
mod details;
