//! The Twilio adapter: `POST /2010-04-01/Accounts/{Sid}/Calls.json` (form,
//! basic auth) to place a call, and the call list plus each call's Events
//! subresource to find one again. One pooled `reqwest` client serves every
//! request; each request is bounded by the configured timeout.
//!
//! Classification (the part that keeps calls single):
//! - 2xx with a `sid`: accepted. 2xx without one: ambiguous.
//! - 429 and 5xx: transient (Twilio refused before placing anything).
//! - other 4xx: permanent, with Twilio's error code and message.
//! - a connect error: transient (nothing was sent).
//! - a timeout or a connection lost after sending: ambiguous.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Client, StatusCode};
use serde::Deserialize;
use tracing::debug;

use super::matching::{decide, launch_id_of, Candidate};
use super::{CreateCall, CreateOutcome, FindCall, LookupOutcome, VoiceProvider};
use crate::config::{CallbackConfig, DispatchPolicy, Instructions, TwilioConfig};

/// Status callback events asked for, in Twilio's names.
pub const STATUS_CALLBACK_EVENTS: [&str; 4] = ["initiated", "ringing", "answered", "completed"];
/// Pages of the call list read per lookup, and calls per page.
const MAX_PAGES: usize = 5;
const PAGE_SIZE: usize = 100;
/// Calls whose events are fetched per lookup.
const MAX_CANDIDATES: usize = 50;

/// The HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct ClientError(#[from] reqwest::Error);

/// The Twilio adapter.
#[derive(Clone)]
pub struct Twilio {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    config: TwilioConfig,
    callbacks: CallbackConfig,
    /// The create endpoint, parsed once (every create posts to it); `Err`
    /// with the text when it does not parse, for reqwest to refuse as before.
    calls_url: Result<reqwest::Url, String>,
    /// `Authorization: Basic ...` of the account, encoded once, kept out of
    /// debug output as reqwest's `basic_auth` keeps it.
    authorization: HeaderValue,
}

/// The `Authorization` value of basic auth with `user` and `password`.
fn basic_authorization(user: &str, password: &str) -> HeaderValue {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    // Base64 is visible ASCII: always a valid header value.
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}"))
        .unwrap_or_else(|_| HeaderValue::from_static("Basic"));
    value.set_sensitive(true);
    value
}

impl Twilio {
    pub fn new(
        config: TwilioConfig,
        callbacks: CallbackConfig,
        policy: &DispatchPolicy,
        pool_size: usize,
    ) -> Result<Self, ClientError> {
        let client = Client::builder()
            .timeout(policy.request_timeout)
            .connect_timeout(policy.connect_timeout)
            .pool_max_idle_per_host(pool_size)
            .tcp_nodelay(true)
            .user_agent(concat!(
                "callstream-launch-dispatcher/",
                env!("CARGO_PKG_VERSION")
            ))
            .build()?;
        let calls_url = calls_url(&config);
        let authorization = basic_authorization(&config.account_sid, &config.auth_token);
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                calls_url,
                authorization,
                config,
                callbacks,
            }),
        })
    }

    fn calls_url(&self) -> String {
        match &self.inner.calls_url {
            Ok(url) => url.to_string(),
            Err(text) => text.clone(),
        }
    }
}

/// The create endpoint of the account, parsed; the text if it does not parse.
fn calls_url(config: &TwilioConfig) -> Result<reqwest::Url, String> {
    let url = format!(
        "{}/2010-04-01/Accounts/{}/Calls.json",
        config.base_url, config.account_sid
    );
    reqwest::Url::parse(&url).map_err(|_| url)
}

/// The `StatusCallback` URL of a call: the gateway's Twilio endpoint for
/// the tenant's integration, with contact, launch, campaign and tenant in
/// the query (Twilio signs the whole URL, so they come back trusted).
pub fn status_callback_url(callbacks: &CallbackConfig, call: &CreateCall) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("contact_id", &call.contact_id)
        .append_pair("launch_id", &call.launch_id.as_hyphenated().to_string())
        .append_pair("campaign_id", &call.campaign_id)
        .append_pair("tenant", &call.tenant_id)
        .finish();
    let integration: String =
        form_urlencoded::byte_serialize(callbacks.integration_for(&call.tenant_id).as_bytes())
            .collect();
    format!(
        "{}/v1/webhooks/twilio/{integration}?{query}",
        callbacks.base_url
    )
}

/// The form body of a create.
pub fn create_form(config: &TwilioConfig, callbacks: &CallbackConfig, call: &CreateCall) -> String {
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("To", &call.to);
    if let Some(from) = call.from.as_ref().or(config.default_from.as_ref()) {
        form.append_pair("From", from);
    }
    match &config.instructions {
        Instructions::Url(url) => form.append_pair("Url", url),
        Instructions::Twiml(twiml) => form.append_pair("Twiml", twiml),
    };
    form.append_pair("StatusCallback", &status_callback_url(callbacks, call));
    form.append_pair("StatusCallbackMethod", "POST");
    for event in STATUS_CALLBACK_EVENTS {
        form.append_pair("StatusCallbackEvent", event);
    }
    if let Some(detection) = &config.machine_detection {
        form.append_pair("MachineDetection", detection);
    }
    form.finish()
}

#[derive(Deserialize)]
struct CallJson {
    sid: Option<String>,
    status: Option<String>,
    date_created: Option<String>,
    subresource_uris: Option<SubresourceUris>,
}

#[derive(Deserialize)]
struct SubresourceUris {
    events: Option<String>,
}

#[derive(Deserialize)]
struct ErrorJson {
    code: Option<i64>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct ListJson {
    #[serde(default)]
    calls: Vec<CallJson>,
    next_page_uri: Option<String>,
}

#[derive(Deserialize)]
struct EventsJson {
    #[serde(default)]
    events: Vec<EventJson>,
}

#[derive(Deserialize)]
struct EventJson {
    request: Option<EventRequest>,
}

#[derive(Deserialize)]
struct EventRequest {
    url: Option<String>,
}

/// What a create's HTTP answer means.
pub fn classify_create(status: StatusCode, body: &[u8]) -> CreateOutcome {
    let code = status.as_u16();
    if status.is_success() {
        return match serde_json::from_slice::<CallJson>(body)
            .ok()
            .and_then(|c| c.sid)
        {
            Some(call_id) if !call_id.is_empty() => CreateOutcome::Accepted { call_id },
            // It said yes, but not to what: the call may exist.
            _ => CreateOutcome::Ambiguous {
                reason: "bad_response".into(),
                detail: Some(format!("HTTP {code} without a call sid")),
            },
        };
    }
    let detail = serde_json::from_slice::<ErrorJson>(body).ok().map(|e| {
        format!(
            "{}: {}",
            e.code.map_or_else(|| "?".to_string(), |c| c.to_string()),
            e.message.unwrap_or_default()
        )
    });
    let reason = format!("http_{code}");
    // Only an answer that proves no call was created may lead to another
    // create. Twilio documents its 4xx answers (429 included) as refusals of
    // the request; a 5xx or 408 may come from a proxy or load balancer in
    // front of it after Twilio created the call, so it is looked up, never
    // blindly re-sent.
    if status == StatusCode::TOO_MANY_REQUESTS {
        CreateOutcome::Transient { reason, detail }
    } else if status.is_client_error() && status != StatusCode::REQUEST_TIMEOUT {
        CreateOutcome::Permanent { reason, detail }
    } else {
        CreateOutcome::Ambiguous { reason, detail }
    }
}

/// What a transport error on a create means.
fn classify_error(error: &reqwest::Error) -> CreateOutcome {
    let detail = Some(error.to_string());
    if error.is_connect() {
        // Never connected (refused, unreachable, TLS handshake): no request
        // reached Twilio, so sending it again cannot place a second call.
        CreateOutcome::Transient {
            reason: "connect".into(),
            detail,
        }
    } else if error.is_timeout() {
        CreateOutcome::Ambiguous {
            reason: "timeout".into(),
            detail,
        }
    } else {
        CreateOutcome::Ambiguous {
            reason: "transport".into(),
            detail,
        }
    }
}

fn parse_date(raw: &str) -> Option<i64> {
    DateTime::parse_from_rfc2822(raw)
        .or_else(|_| DateTime::parse_from_rfc3339(raw))
        .ok()
        .map(|t| t.with_timezone(&Utc).timestamp_millis())
}

impl Inner {
    async fn create(&self, call: CreateCall) -> CreateOutcome {
        let body = create_form(&self.config, &self.callbacks, &call);
        let request = match &self.calls_url {
            Ok(url) => self.client.post(url.clone()),
            // reqwest refuses it when sending, as it always did.
            Err(text) => self.client.post(text.as_str()),
        };
        let response = request
            .header(AUTHORIZATION, self.authorization.clone())
            .header(
                CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            )
            .body(body)
            .send()
            .await;
        let response = match response {
            Ok(response) => response,
            Err(error) => return classify_error(&error),
        };
        let status = response.status();
        match response.bytes().await {
            Ok(body) => classify_create(status, &body),
            // The status line came but the body broke off: for a 2xx the
            // call exists and we do not know its sid.
            Err(error) if status.is_success() => CreateOutcome::Ambiguous {
                reason: "body".into(),
                detail: Some(error.to_string()),
            },
            Err(_) => classify_create(status, b""),
        }
    }

    async fn get_json<T: for<'de> Deserialize<'de>>(&self, url: &str) -> Result<T, LookupOutcome> {
        let failed = |reason: &str, detail: String| LookupOutcome::Failed {
            reason: reason.into(),
            detail: Some(detail),
        };
        let response = self
            .client
            .get(url)
            .basic_auth(&self.config.account_sid, Some(&self.config.auth_token))
            .send()
            .await
            .map_err(|e| failed("transport", e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(failed(&format!("http_{}", status.as_u16()), url.to_owned()));
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| failed("body", e.to_string()))?;
        serde_json::from_slice(&body).map_err(|e| failed("bad_response", e.to_string()))
    }

    async fn find(&self, find: FindCall) -> LookupOutcome {
        match self.candidates(&find).await {
            Ok(candidates) => {
                debug!(launch = %find.launch_id, candidates = candidates.len(), "lookup");
                decide(&find.launch_id, find.since_ms, &candidates)
            }
            Err(outcome) => outcome,
        }
    }

    async fn candidates(&self, find: &FindCall) -> Result<Vec<Candidate>, LookupOutcome> {
        // Twilio filters StartTime by day (UTC); the exact bound is applied
        // to date_created afterwards.
        let day = DateTime::from_timestamp_millis(find.since_ms)
            .unwrap_or_default()
            .format("%Y-%m-%d")
            .to_string();
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("To", &find.to)
            .append_pair("StartTime>", &day)
            .append_pair("PageSize", &PAGE_SIZE.to_string())
            .finish();
        let mut next = Some(format!(
            "{}/2010-04-01/Accounts/{}/Calls.json?{query}",
            self.config.base_url, self.config.account_sid
        ));
        let mut calls = Vec::new();
        for _ in 0..MAX_PAGES {
            let Some(url) = next.take() else { break };
            let page: ListJson = self.get_json(&url).await?;
            calls.extend(page.calls);
            next = page
                .next_page_uri
                .filter(|u| !u.is_empty())
                .map(|u| format!("{}{u}", self.config.base_url));
        }
        let mut candidates = Vec::new();
        for call in calls {
            let Some(call_id) = call.sid else { continue };
            let created_ms = call.date_created.as_deref().and_then(parse_date);
            if created_ms.is_some_and(|t| t < find.since_ms) {
                continue;
            }
            if candidates.len() >= MAX_CANDIDATES {
                return Err(LookupOutcome::Failed {
                    reason: "too_many_candidates".into(),
                    detail: Some(format!("more than {MAX_CANDIDATES} calls to the number")),
                });
            }
            let events_url = match call.subresource_uris.and_then(|s| s.events) {
                Some(path) => format!("{}{path}", self.config.base_url),
                None => format!(
                    "{}/2010-04-01/Accounts/{}/Calls/{call_id}/Events.json",
                    self.config.base_url, self.config.account_sid
                ),
            };
            let events: EventsJson = self.get_json(&events_url).await?;
            let mut launch_ids: Vec<String> = events
                .events
                .iter()
                .filter_map(|e| e.request.as_ref()?.url.as_deref())
                .filter_map(launch_id_of)
                .collect();
            launch_ids.dedup();
            candidates.push(Candidate {
                call_id,
                created_ms,
                status: call.status,
                launch_ids,
            });
        }
        Ok(candidates)
    }
}

/// The adapter's name, as `CallLaunch.provider` records it.
pub const NAME: &str = "twilio";

impl VoiceProvider for Twilio {
    fn name(&self) -> &'static str {
        NAME
    }

    fn create_call(&self, call: CreateCall) -> BoxFuture<'static, CreateOutcome> {
        let inner = self.inner.clone();
        Box::pin(async move { inner.create(call).await })
    }

    fn find_call(&self, find: FindCall) -> BoxFuture<'static, LookupOutcome> {
        let inner = self.inner.clone();
        Box::pin(async move { inner.find(find).await })
    }
}

impl std::fmt::Debug for Twilio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Twilio")
            .field("calls_url", &self.calls_url())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "twilio_tests.rs"]
mod tests;
