//! The effect handler: reads a call record from Twilio's REST API (or the
//! simulator, which speaks the same subset), read-only, under a per-tenant
//! rate limit.
//!
//! - `GET /2010-04-01/Accounts/{Sid}/Calls/{CallSid}.json`: the record.
//! - For a final status, `GET .../Calls/{CallSid}/Events.json`: the status
//!   callbacks the platform made, from which the final callback's
//!   `SequenceNumber` follows (its own if it was sent, else one past the
//!   last one sent, as sequence numbers count callbacks from 0). The
//!   gateway's event id rule needs it.
//!
//! Guarantees: every request first waits for the tenant's governor quota
//! (`until_key_ready`): a burst of lookups is spread out, never dropped.
//! Every outcome, failures included, is a [`FetchResult`]; nothing panics.

use std::sync::Arc;

use callstream_domain::normaliser::{normalise, provider_status};
use callstream_runtime::{EffectHandler, EffectRequest};
use futures::future::BoxFuture;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use reqwest::StatusCode;
use serde_json::Value;

use crate::config::{RecoveryConfig, TwilioAccess};
use crate::wire::{CallRecord, FetchRequest, FetchResult};

/// Twilio lookups behind a per-tenant rate limit.
#[derive(Clone)]
pub struct TwilioFetcher {
    client: reqwest::Client,
    access: TwilioAccess,
    limiter: Arc<DefaultKeyedRateLimiter<String>>,
}

impl std::fmt::Debug for TwilioFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwilioFetcher")
            .field("base_url", &self.access.base_url)
            .field("account_sid", &self.access.account_sid)
            .finish_non_exhaustive()
    }
}

fn failed(retriable: bool, reason: impl Into<String>) -> FetchResult {
    FetchResult::Failed {
        retriable,
        reason: reason.into(),
    }
}

/// Whether a status code is worth retrying.
fn retriable(status: StatusCode) -> bool {
    status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS
}

/// A sid that is safe in a URL path (Twilio sids are letters and digits).
fn valid_sid(sid: &str) -> bool {
    !sid.is_empty() && sid.len() <= 64 && sid.bytes().all(|b| b.is_ascii_alphanumeric())
}

impl TwilioFetcher {
    pub fn new(config: &RecoveryConfig) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.request_timeout)
            .build()?;
        let rate = std::num::NonZeroU32::new(config.requests_per_second)
            .unwrap_or(std::num::NonZeroU32::MIN);
        Ok(Self {
            client,
            access: config.twilio.clone(),
            limiter: Arc::new(RateLimiter::keyed(Quota::per_second(rate))),
        })
    }

    fn calls_url(&self) -> String {
        format!(
            "{}/2010-04-01/Accounts/{}/Calls",
            self.access.base_url, self.access.account_sid
        )
    }

    /// One rate-limited GET; `Ok(None)` for 404.
    async fn get(&self, tenant: &str, url: &str) -> Result<Option<Value>, FetchResult> {
        self.limiter.until_key_ready(&tenant.to_string()).await;
        let response = self
            .client
            .get(url)
            .basic_auth(&self.access.account_sid, Some(&self.access.auth_token))
            .send()
            .await
            .map_err(|e| failed(true, format!("request failed: {e}")))?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(failed(
                retriable(status),
                format!("the provider answered {status}"),
            ));
        }
        response
            .json::<Value>()
            .await
            .map(Some)
            .map_err(|e| failed(true, format!("unreadable answer: {e}")))
    }

    /// Looks the call up.
    pub async fn fetch(&self, request: &FetchRequest) -> FetchResult {
        if request.provider != "twilio" {
            return failed(
                false,
                format!("no call record lookup for provider {:?}", request.provider),
            );
        }
        if !valid_sid(&request.call_sid) {
            return failed(false, "the call sid is not a Twilio sid");
        }
        let url = format!("{}/{}.json", self.calls_url(), request.call_sid);
        let call = match self.get(&request.tenant_id, &url).await {
            Ok(Some(call)) => call,
            Ok(None) => return FetchResult::NotFound,
            Err(failure) => return failure,
        };
        let mut record = match parse_call(&call) {
            Some(record) => record,
            None => return failed(false, "the call record has no status"),
        };
        let final_status = provider_status("twilio", &record.status, record.answered_by.as_deref())
            .and_then(|s| normalise(s).ok())
            .is_some_and(|o| o.is_final());
        if final_status {
            let url = format!("{}/{}/Events.json", self.calls_url(), request.call_sid);
            match self.get(&request.tenant_id, &url).await {
                Ok(Some(events)) => {
                    record.sequence_number = Some(final_sequence(&events, &record.status));
                }
                Ok(None) => return failed(true, "the call's events are not found (yet)"),
                Err(failure) => return failure,
            }
        }
        FetchResult::Found { record }
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Reads Twilio's call resource (`status`, `answered_by`, `duration` as a
/// string of seconds, `end_time` in RFC 2822).
pub fn parse_call(call: &Value) -> Option<CallRecord> {
    let status = text(&call["status"])?;
    Some(CallRecord {
        status,
        answered_by: text(&call["answered_by"]),
        duration_seconds: text(&call["duration"]).and_then(|d| d.parse().ok()),
        ended_at_ms: text(&call["end_time"])
            .and_then(|t| chrono::DateTime::parse_from_rfc2822(&t).ok())
            .map(|t| t.timestamp_millis()),
        sequence_number: None,
    })
}

/// The `SequenceNumber` of the call's final status callback: its own when
/// the Events list has it, else one past the highest sent (0 when none was).
pub fn final_sequence(events: &Value, final_status: &str) -> String {
    let params = events["events"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|e| &e["request"]["parameters"])
                .filter_map(|p| Some((text(&p["CallStatus"])?, text(&p["SequenceNumber"])?)))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if let Some((_, seq)) = params.iter().find(|(status, _)| status == final_status) {
        return seq.clone();
    }
    let next = params
        .iter()
        .filter_map(|(_, seq)| seq.parse::<u64>().ok())
        .max()
        .map_or(0, |max| max + 1);
    next.to_string()
}

impl EffectHandler for TwilioFetcher {
    fn call(&self, request: EffectRequest) -> BoxFuture<'static, Vec<u8>> {
        let this = self.clone();
        Box::pin(async move {
            let result = match serde_json::from_slice::<FetchRequest>(&request.payload) {
                Ok(fetch) => this.fetch(&fetch).await,
                Err(e) => failed(false, format!("unreadable lookup request: {e}")),
            };
            result.encode()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events(list: &[(&str, &str)]) -> Value {
        let events: Vec<Value> = list
            .iter()
            .map(|(status, seq)| {
                json!({"request": {"parameters": {"CallStatus": status, "SequenceNumber": seq}}})
            })
            .collect();
        json!({ "events": events })
    }

    #[test]
    fn the_final_sequence_number_follows_the_callbacks_sent() {
        let cases = [
            (vec![], "completed", "0"),
            (
                vec![("initiated", "0"), ("ringing", "1"), ("in-progress", "2")],
                "completed",
                "3",
            ),
            (vec![("initiated", "0"), ("ringing", "1")], "no-answer", "2"),
            // Delivered after all (a duplicate or a delay): its own number.
            (
                vec![("initiated", "0"), ("completed", "3"), ("ringing", "1")],
                "completed",
                "3",
            ),
            (vec![("ringing", "1"), ("ringing", "1")], "busy", "2"),
        ];
        for (list, status, expected) in cases {
            assert_eq!(final_sequence(&events(&list), status), expected, "{list:?}");
        }
    }

    #[test]
    fn call_records_are_read_as_twilio_writes_them() {
        let call = json!({
            "sid": "CA1", "status": "completed", "answered_by": "machine_end_beep",
            "duration": "37", "end_time": "Tue, 10 Jan 2023 18:59:47 +0000",
        });
        let record = parse_call(&call).unwrap();
        assert_eq!(record.status, "completed");
        assert_eq!(record.answered_by.as_deref(), Some("machine_end_beep"));
        assert_eq!(record.duration_seconds, Some(37));
        assert_eq!(record.ended_at_ms, Some(1_673_377_187_000));
        let ringing =
            parse_call(&json!({"status": "ringing", "answered_by": null, "duration": null}));
        assert_eq!(ringing.map(|r| r.duration_seconds), Some(None));
        assert_eq!(parse_call(&json!({"sid": "CA1"})), None);
        assert!(valid_sid("CA0123abc") && !valid_sid("../x") && !valid_sid(""));
    }
}
