//! Carries a [`CallPlan`] out in time: one task a call, with two strands.
//! The timeline moves the call record through its statuses at their
//! (scaled) times; the deliveries strand posts the status callbacks and the
//! analysis, one after another in send order, so the order a receiver sees
//! is the order planned (faults included), not a race between requests.
//!
//! Status callbacks are form posts signed with `X-Twilio-Signature` over
//! the exact `StatusCallback` URL; analyses are JSON signed by the Standard
//! Webhooks scheme, re-signed with a fresh timestamp on every attempt.
//! A duplicate is the same request again: same body, same signature
//! (status) or same `webhook-id` (analysis).

use std::sync::Arc;
use std::time::{Duration, Instant};

use callstream_platform::clock::{Clock as _, SystemClock};
use chrono::{DateTime, Utc};

use crate::callback::{status_params, CallFacts, StatusReport};
use crate::config::Behaviour;
use crate::plan::{CallPlan, CallStatus, Delivery, Payload};
use crate::signing::{standard_signature, twilio_signature};
use crate::state::SimState;
use crate::store::SentRequest;
use crate::utterance::{Analysis, AnalysisEvent};

/// Simulated seconds as real time (capped: a sleep must stay addable).
pub fn scaled(secs: f64, scale: f64) -> Duration {
    let real = (secs * scale).clamp(0.0, 365.0 * 86_400.0);
    Duration::try_from_secs_f64(real).unwrap_or(Duration::ZERO)
}

/// When `secs` into the call happens on the process clock: the real offset the call
/// sleeps (`secs` x `scale`), times the clock's rate (1 on the system clock, so a compressed
/// call has compressed timestamps; 1/`scale` on a matching scaled clock, so a soak's call
/// lasts its real length in business time).
fn real_time(call: &CallFacts, secs: f64, scale: f64) -> DateTime<Utc> {
    let rate = callstream_platform::clock::process_clock().rate();
    let offset = chrono::Duration::from_std(scaled(secs, scale * rate)).unwrap_or_default();
    call.created_at + offset
}

async fn sleep_until(started: Instant, secs: f64, scale: f64) {
    let at = tokio::time::Instant::from_std(started + scaled(secs, scale));
    tokio::time::sleep_until(at).await;
}

/// Plays one call; returns when its last status is set and its last
/// delivery made.
pub(crate) async fn play(
    state: SimState,
    generation: u64,
    call: CallFacts,
    plan: CallPlan,
    b: Arc<Behaviour>,
    started: Instant,
) {
    let ctx = Ctx {
        state,
        generation,
        call,
        plan,
        b,
        started,
    };
    tokio::join!(ctx.timeline(), ctx.deliveries());
    ctx.state.store().count(generation, |s| {
        s.calls_active = s.calls_active.saturating_sub(1);
    });
}

struct Ctx {
    state: SimState,
    generation: u64,
    call: CallFacts,
    plan: CallPlan,
    b: Arc<Behaviour>,
    started: Instant,
}

impl Ctx {
    async fn timeline(&self) {
        let store = self.state.store();
        for t in &self.plan.transitions {
            sleep_until(self.started, t.at, self.b.time_scale).await;
            let now = callstream_platform::clock::now_utc();
            let plan = &self.plan;
            store.update(self.generation, &self.call.sid, |c| {
                c.status = t.status;
                c.updated_at = now;
                if t.status == CallStatus::InProgress {
                    c.answered_by = plan.answered_by;
                }
                if t.status.is_final() {
                    c.end_time = Some(now);
                    c.duration = Some(plan.duration_secs);
                }
            });
        }
        if self.plan.lost {
            store.update(self.generation, &self.call.sid, |c| c.vanished = true);
            store.count(self.generation, |s| s.calls_lost += 1);
        }
    }

    async fn deliveries(&self) {
        for d in &self.plan.deliveries {
            sleep_until(self.started, d.send_at, self.b.time_scale).await;
            match d.payload {
                Payload::Status {
                    transition,
                    sequence,
                } => self.send_status(d, transition, sequence).await,
                Payload::Analysis => self.send_analysis(d).await,
            }
        }
    }

    async fn send_status(&self, d: &Delivery, transition: usize, sequence: u32) {
        let Some(target) = &self.call.target else {
            return;
        };
        let t = self.plan.transitions[transition];
        let report = StatusReport {
            status: t.status,
            sequence,
            at: real_time(&self.call, t.at, self.b.time_scale),
            answered_by: self.plan.answered_by,
            duration_secs: self.plan.duration_secs,
        };
        let params = status_params(&self.call, &report);
        let signature = twilio_signature(&self.state.0.auth_token, &target.url, &params);
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&params)
            .finish();
        let token = format!("{}-{sequence}", self.call.sid);
        self.state.store().count(self.generation, |s| {
            s.callbacks_sent += 1;
            s.callbacks_duplicated += u64::from(d.duplicate);
            s.callbacks_delayed += u64::from(d.delayed && !d.duplicate);
            s.callbacks_reordered += u64::from(d.reordered && !d.duplicate);
        });
        // Listed in the Events subresource from the moment it is sent, so a
        // lookup racing the request still sees the callback URL.
        let store = self.state.store();
        let request = SentRequest {
            params,
            sent_at: callstream_platform::clock::now_utc(),
            response_code: None,
            elapsed_ms: 0,
        };
        let slot = store.update(self.generation, &self.call.sid, |c| {
            c.requests.push(request);
            c.requests.len() - 1
        });
        let clock = Instant::now();
        let client = &self.state.0.client;
        let answer = post(&self.b, self.b.callback_retries, || {
            client
                .post(&target.url)
                .header("content-type", "application/x-www-form-urlencoded")
                .header("x-twilio-signature", &signature)
                .header("i-twilio-idempotency-token", &token)
                .body(body.clone())
        })
        .await;
        let code = answer.code;
        let delivered = code.is_some_and(|c| (200..300).contains(&c));
        let elapsed_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        store.update(self.generation, &self.call.sid, |c| {
            if let Some(r) = slot.and_then(|slot| c.requests.get_mut(slot)) {
                r.response_code = code;
                r.elapsed_ms = elapsed_ms;
            }
            c.accepted_event_ids.extend(answer.event_id);
        });
        store.count(self.generation, |s| {
            s.callbacks_delivered += u64::from(delivered);
            s.callbacks_failed += u64::from(!delivered);
        });
    }

    async fn send_analysis(&self, d: &Delivery) {
        let (Some(url), Some(target), Some((intent, phrase))) = (
            &self.state.0.analysis_url,
            &self.call.target,
            self.plan.intent,
        ) else {
            return;
        };
        let Some(contact_id) = target.contact_id.clone() else {
            return;
        };
        // One platform account serves several tenants; each has its own analysis webhook.
        let Some(url) = analysis_url_for(url, target.tenant.as_deref()) else {
            return;
        };
        let end = self.plan.final_transition();
        let event = AnalysisEvent {
            tenant_id: target.tenant.clone(),
            call_id: self.call.sid.clone(),
            contact_id,
            launch_id: target.launch_id.clone(),
            campaign_id: target.campaign_id.clone(),
            // The JSON format speaks callstream's outcome vocabulary, where
            // Twilio's "completed" is ambiguous (person or machine?); only
            // calls a person answered get an analysis.
            status: "answered",
            occurred_at: AnalysisEvent::occurred(real_time(&self.call, end.at, self.b.time_scale)),
            duration_seconds: self.plan.duration_secs,
            answered_by: "human",
            analysis: Analysis::of(intent, phrase),
        };
        let Ok(body) = serde_json::to_vec(&event) else {
            return;
        };
        let id = format!("msg_{}_analysis", self.call.sid);
        self.state.store().count(self.generation, |s| {
            s.analysis_sent += 1;
            s.analysis_duplicated += u64::from(d.duplicate);
        });
        let client = &self.state.0.client;
        let key = &self.state.0.analysis_key;
        let answer = post(&self.b, self.b.analysis_retries, || {
            // Signature freshness is checked in real time (a transport check).
            let timestamp = SystemClock.now_unix();
            client
                .post(&url)
                .header("content-type", "application/json")
                .header("webhook-id", &id)
                .header("webhook-timestamp", timestamp.to_string())
                .header(
                    "webhook-signature",
                    standard_signature(key, &id, timestamp, &body),
                )
                .body(body.clone())
        })
        .await;
        let delivered = answer.code.is_some_and(|c| (200..300).contains(&c));
        let store = self.state.store();
        store.update(self.generation, &self.call.sid, |c| {
            c.accepted_event_ids.extend(answer.event_id);
        });
        store.count(self.generation, |s| {
            s.analysis_delivered += u64::from(delivered);
            s.analysis_failed += u64::from(!delivered);
        });
    }
}

/// What the receiver answered a webhook at last.
#[derive(Debug, Default)]
struct Answer {
    /// Its status; None when it never answered.
    code: Option<u16>,
    /// The `event_id` of a 2xx answer's JSON body (the gateway names the event it stored).
    event_id: Option<String>,
}

/// Sends the request `build` makes, again after a doubling backoff while it
/// gets no 2xx, at most `retries` more times. The last answer, if any.
async fn post(b: &Behaviour, retries: u32, build: impl Fn() -> reqwest::RequestBuilder) -> Answer {
    let timeout = Duration::from_millis(b.delivery_timeout_ms);
    let mut backoff = Duration::from_millis(b.retry_backoff_ms);
    let mut last = Answer::default();
    for attempt in 0..=retries {
        if attempt > 0 {
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
        }
        match build().timeout(timeout).send().await {
            Ok(response) => {
                last.code = Some(response.status().as_u16());
                if response.status().is_success() {
                    last.event_id = response
                        .json::<serde_json::Value>()
                        .await
                        .ok()
                        .and_then(|v| v.get("event_id")?.as_str().map(str::to_owned));
                    break;
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, attempt, "delivery failed");
            }
        }
    }
    last
}

/// The analysis URL for a call of `tenant`: `{tenant}` in the configured URL is the call's
/// tenant; a URL without it serves every tenant. None when it names a tenant the call has not.
pub fn analysis_url_for(configured: &str, tenant: Option<&str>) -> Option<String> {
    if !configured.contains("{tenant}") {
        return Some(configured.to_owned());
    }
    Some(configured.replace("{tenant}", tenant.filter(|t| !t.is_empty())?))
}

#[cfg(test)]
mod analysis_url_tests {
    use super::analysis_url_for;

    #[test]
    fn the_tenant_placeholder_names_the_calls_tenant() {
        let url = "http://gw/v1/webhooks/json/{tenant}-analysis";
        assert_eq!(
            analysis_url_for(url, Some("bolt")).as_deref(),
            Some("http://gw/v1/webhooks/json/bolt-analysis")
        );
        assert_eq!(analysis_url_for(url, None), None);
        assert_eq!(
            analysis_url_for("http://gw/a", None).as_deref(),
            Some("http://gw/a")
        );
    }
}
