//! The fuzz harness: one function per fuzz target, each taking arbitrary
//! bytes through the gateway's parsers and verifiers exactly as a request
//! would, and panicking when an invariant breaks (which is how libFuzzer,
//! and the corpus replay test, see a failure).
//!
//! Input layout, so corpus files stay readable: newline-separated fields,
//! the last field (the body) taking the rest, newlines included; a field
//! that is absent is a header that was not sent.
//!
//! The two webhook targets also send each input through the router's own
//! webhook path ([`check_webhook`]: content type, size, signature, rate
//! budget, parse, encode, everything up to the Kafka produce, which needs a
//! broker and is left out) and check that it agrees with the provider's
//! steps run one by one.
//!
//! This file is compiled twice: as the fuzz crate's library (for the
//! libFuzzer targets, on nightly) and as a module of the gateway's
//! `fuzz_corpus` test (on stable), so both exercise the same code.

use std::sync::LazyLock;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Request, StatusCode};
use base64::Engine as _;
use callstream_domain::ids;
use callstream_gateway::app::{check_webhook, limiter, Ready};
use callstream_gateway::codec::{AvroCodec, EventCodec};
use callstream_gateway::config::{IntegrationConfig, RateLimit};
use callstream_gateway::error::ApiError;
use callstream_gateway::event::{CallEventDraft, ProviderKind};
use callstream_gateway::launch;
use callstream_gateway::provider::json::Json;
use callstream_gateway::provider::twilio::{Twilio, SIGNATURE_HEADER};
use callstream_gateway::provider::{Inbound, Provider, Verified, MAX_ID_LEN};
use callstream_gateway::secret::Secret;
use callstream_gateway::verify::standard_webhooks::{self, SignedHeaders, DEFAULT_TOLERANCE};
use callstream_gateway::verify::{twilio, ManualClock, VerifyError};
use chrono::{DateTime, Utc};

/// The clock every target runs at (Unix seconds): fixed, so a corpus file
/// means the same thing on every run.
pub const NOW: i64 = 1_700_000_000;
/// Where the Twilio parser sees a URL without a scheme and host of its own.
const DEFAULT_BASE: &str = "https://gw.example.com";
/// The key used when a corpus file's secret is not a `whsec_` secret.
const FALLBACK_WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const TENANT: &str = "acme";

/// Runs the router's async webhook path; nothing in it waits on I/O (the
/// body is in memory), so one current-thread runtime serves every input.
static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(
        || match tokio::runtime::Builder::new_current_thread().build() {
            Ok(runtime) => runtime,
            Err(e) => panic!("cannot start the harness's runtime: {e}"),
        },
    );

/// How far an input got, so the corpus replay can check that its seeds
/// still reach the interesting paths (a format change that made every seed
/// fail early would otherwise go unnoticed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reached {
    /// The request's signature (or bearer token's form) was accepted.
    pub verified: bool,
    /// The body parsed into an event or command (and encoded).
    pub parsed: bool,
    /// The router's webhook path accepted it, up to the Kafka produce.
    pub routed: bool,
}

/// Splits `data` into `N` fields at the first `N - 1` newlines; the last
/// field is the rest. Missing fields are `None`.
pub fn fields<const N: usize>(data: &[u8]) -> [Option<&[u8]>; N] {
    let mut out = [None; N];
    let mut rest = Some(data);
    for (i, slot) in out.iter_mut().enumerate() {
        let Some(current) = rest else { break };
        if i + 1 == N {
            *slot = Some(current);
            break;
        }
        match current.iter().position(|b| *b == b'\n') {
            Some(at) => {
                *slot = Some(&current[..at]);
                rest = Some(&current[at + 1..]);
            }
            None => {
                *slot = Some(current);
                rest = None;
            }
        }
    }
    out
}

fn received_at() -> DateTime<Utc> {
    DateTime::from_timestamp(NOW, 0).unwrap_or_default()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn integration(provider: ProviderKind, secrets: Vec<Secret>) -> IntegrationConfig {
    IntegrationConfig {
        id: "fuzz".into(),
        tenant_id: TENANT.into(),
        provider,
        secrets,
        rate_limit: RateLimit::default(),
    }
}

/// Adds a header if its bytes are a valid header value (as the HTTP layer
/// would refuse the request otherwise).
fn header(headers: &mut HeaderMap, name: &'static str, value: Option<&[u8]>) {
    if let Some(value) = value.and_then(|v| HeaderValue::from_bytes(v).ok()) {
        headers.insert(name, value);
    }
}

/// A refusal of a parsed body is the sender's fault (400 or 422), never
/// ours (500), and never one that asks the sender to retry.
fn assert_client_error(error: &ApiError) {
    let status = error.status();
    assert!(
        status == StatusCode::BAD_REQUEST || status == StatusCode::UNPROCESSABLE_ENTITY,
        "a body was refused with {status} ({error:?})"
    );
}

/// What every accepted call event must be: ids present and bounded, our
/// tenant, and a value that encodes (else the gateway would answer 500).
fn assert_sound_event(draft: &CallEventDraft) {
    for (name, id) in [
        ("call_id", &draft.call_id),
        ("contact_id", &draft.contact_id),
        ("provider_status", &draft.provider_status),
    ] {
        assert!(
            !id.is_empty() && id.len() <= MAX_ID_LEN,
            "{name} of length {}",
            id.len()
        );
        assert!(!id.chars().any(char::is_control), "{name} has controls");
    }
    assert_eq!(draft.tenant_id, TENANT);
    if let Err(e) = AvroCodec.call_event(draft.clone()) {
        panic!("an accepted call event does not encode: {e}");
    }
}

/// `body` posted to `path_and_query` with `headers` and `content_type`,
/// through the router's webhook checks with a body limit of `limit`.
/// `None` if no HTTP request can carry that path (the router never sees it).
fn route(
    provider: &dyn Provider,
    integration: &IntegrationConfig,
    path_and_query: &str,
    headers: &HeaderMap,
    content_type: &'static str,
    body: &[u8],
    limit: usize,
) -> Option<Result<Ready, ApiError>> {
    let mut request = Request::post(path_and_query)
        .body(Body::from(body.to_vec()))
        .ok()?;
    // The URI parser may read a string as something other than a path.
    if request.uri().path_and_query().map(|p| p.as_str()) != Some(path_and_query) {
        return None;
    }
    let sent = request.headers_mut();
    sent.extend(headers.clone());
    sent.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    sent.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    // A fresh budget: one request never exhausts it.
    let budget = limiter(RateLimit::default());
    Some(RUNTIME.block_on(check_webhook(
        provider,
        integration,
        &budget,
        &AvroCodec,
        limit,
        request,
    )))
}

/// The router's webhook path agrees with the provider's steps: accepted
/// exactly when verified and parsed, with the same event id and the
/// contact as key; refused for the reason the first failing step gives;
/// refused for a wrong content type or a body over the limit, whatever
/// else the request holds.
#[allow(clippy::too_many_arguments)]
fn check_route(
    provider: &dyn Provider,
    integration: &IntegrationConfig,
    path_and_query: &str,
    headers: &HeaderMap,
    content_types: [&'static str; 2],
    body: &[u8],
    verified: bool,
    parsed: &Result<CallEventDraft, ApiError>,
) -> bool {
    let mut accepted = false;
    for content_type in content_types {
        let Some(routed) = route(
            provider,
            integration,
            path_and_query,
            headers,
            content_type,
            body,
            body.len(),
        ) else {
            return false;
        };
        match (&routed, verified, parsed) {
            (Ok(ready), true, Ok(draft)) => {
                assert_eq!(ready.event_id, draft.event_id, "the route's event id");
                assert_eq!(ready.key, draft.contact_id, "the route's record key");
                accepted = true;
            }
            (Err(e), false, _) => {
                assert_eq!(e.status(), StatusCode::UNAUTHORIZED, "unsigned: {e:?}");
            }
            (Err(e), true, Err(_)) => assert_client_error(e),
            (routed, verified, parsed) => panic!(
                "the route ({:?}) disagrees with verify ({verified}) and parse ({:?})",
                routed.as_ref().map(|r| r.event_id),
                parsed.as_ref().map(|d| d.event_id)
            ),
        }
    }
    let wrong = route(
        provider,
        integration,
        path_and_query,
        headers,
        "text/plain",
        body,
        body.len(),
    );
    if let Some(wrong) = wrong {
        assert!(
            matches!(wrong, Err(ApiError::WrongContentType { .. })),
            "a text/plain body got past the content type check"
        );
    }
    if let Some(limit) = body.len().checked_sub(1) {
        let over = route(
            provider,
            integration,
            path_and_query,
            headers,
            content_types[0],
            body,
            limit,
        );
        if let Some(over) = over {
            assert!(
                matches!(over, Err(ApiError::TooLarge { .. })),
                "a body over the limit got past the size check"
            );
        }
    }
    accepted
}

/// Twilio: `url \n X-Twilio-Signature \n auth token \n form body`.
pub fn twilio_webhook(data: &[u8]) -> Reached {
    let [url, signature, token, body] = fields::<4>(data);
    let url = String::from_utf8_lossy(url.unwrap_or_default()).into_owned();
    let token = token.unwrap_or_default().to_vec();
    let body = body.unwrap_or_default();
    let tokens = [Secret::new(token.clone())];
    let params = twilio::sorted_params(body);

    // The verifier on the raw pieces: any bytes, no panic.
    let verdict = twilio::verify(&tokens, &url, &params, signature);
    if signature.is_none() {
        assert_eq!(verdict, Err(VerifyError::Missing));
    }
    // What Twilio would send verifies, for the URL and its other port form.
    let genuine = b64(&twilio::sign(&token, &url, &params));
    assert_eq!(
        twilio::verify(&tokens, &url, &params, Some(genuine.as_bytes())),
        Ok(()),
        "a genuine signature was refused"
    );
    if let Some(toggled) = twilio::with_port_toggled(&url) {
        assert_ne!(toggled, url);
        assert_eq!(
            twilio::verify(&tokens, &toggled, &params, Some(genuine.as_bytes())),
            Ok(()),
            "the other port form of a signed URL was refused"
        );
    }
    // Another token never verifies it.
    let mut other = token.clone();
    other.push(b'!');
    assert_eq!(
        twilio::verify(
            &[Secret::new(other)],
            &url,
            &params,
            Some(genuine.as_bytes())
        ),
        Err(VerifyError::Mismatch),
        "a signature verified under the wrong token"
    );

    // The provider, as the router drives it: verify, then parse the form.
    let (base, path_and_query) = split_url(&url);
    let provider = Twilio {
        public_base_url: base.to_string(),
    };
    let integration = integration(ProviderKind::Twilio, tokens.to_vec());
    let mut headers = HeaderMap::new();
    header(&mut headers, SIGNATURE_HEADER, signature);
    let inbound = Inbound {
        integration: &integration,
        path_and_query,
        headers: &headers,
        body,
        received_at: received_at(),
    };
    let verified = provider.verify(&inbound).is_ok();
    // Signed does not mean well formed: the parser must stand any form.
    let parse = || {
        let verified = Verified {
            form: twilio::sorted_params(body),
            signed_at: None,
        };
        provider.parse(&inbound, verified)
    };
    let parsed = parse();
    let routed = check_route(
        &provider,
        &integration,
        path_and_query,
        &headers,
        [
            "application/x-www-form-urlencoded",
            "Application/X-WWW-Form-Urlencoded; charset=utf-8",
        ],
        body,
        verified,
        &parsed,
    );
    match parsed {
        Ok(draft) => {
            assert_sound_event(&draft);
            assert_eq!(
                parse().map(|d| d.event_id),
                Ok(draft.event_id),
                "the same callback got another event id"
            );
            Reached {
                verified,
                parsed: true,
                routed,
            }
        }
        Err(e) => {
            assert_client_error(&e);
            Reached {
                verified,
                parsed: false,
                routed,
            }
        }
    }
}

/// Splits a URL into the public base (scheme and authority) and the path
/// and query the router would see. A URL it cannot split is all path.
fn split_url(url: &str) -> (&str, &str) {
    if let Some(scheme_end) = url.find("://") {
        let after = scheme_end + 3;
        if let Some(offset) = url[after..].find(['/', '?']) {
            let at = after + offset;
            if url[at..].starts_with('/') {
                return (&url[..at], &url[at..]);
            }
        }
    }
    (DEFAULT_BASE, url)
}

/// Standard Webhooks: `whsec secret \n webhook-id \n webhook-timestamp \n
/// webhook-signature \n JSON body`.
pub fn standard_webhook(data: &[u8]) -> Reached {
    let [secret, id, timestamp, signature, body] = fields::<5>(data);
    let body = body.unwrap_or_default();
    let secret = String::from_utf8_lossy(secret.unwrap_or_default()).into_owned();
    let key = standard_webhooks::decode_secret(&secret)
        .or_else(|_| standard_webhooks::decode_secret(FALLBACK_WHSEC));
    let Ok(key) = key else {
        panic!("the fallback secret does not decode");
    };
    let keys = [key.clone()];
    let clock = ManualClock::new(NOW * 1_000);
    fn signed<'a>(
        id: Option<&'a [u8]>,
        timestamp: Option<&'a [u8]>,
        signature: Option<&'a [u8]>,
    ) -> SignedHeaders<'a> {
        SignedHeaders {
            id,
            timestamp,
            signature,
        }
    }

    let verdict = standard_webhooks::verify(
        &keys,
        signed(id, timestamp, signature),
        body,
        &clock,
        DEFAULT_TOLERANCE,
    );
    let parsed_ts = timestamp.and_then(standard_webhooks::parse_timestamp);
    if let Ok(at) = verdict {
        assert_eq!(Some(at), parsed_ts, "accepted a timestamp it cannot read");
    }

    // A genuine signature (alone, or in a rotation list) verifies exactly
    // when the timestamp is readable and fresh; a wrong key never does.
    if let (Some(id_bytes), Some(ts_bytes)) = (id, timestamp) {
        let tag = standard_webhooks::sign(key.expose(), id_bytes, ts_bytes, body);
        let genuine = format!("v1,{}", b64(&tag));
        let rotated = format!("v1,bm90IGl0 v1a,xyz {genuine}");
        let fresh = parsed_ts.is_some_and(|t| NOW.abs_diff(t) <= DEFAULT_TOLERANCE.as_secs());
        let want = if fresh {
            parsed_ts.ok_or(VerifyError::Stale)
        } else {
            Err(VerifyError::Stale)
        };
        for presented in [&genuine, &rotated] {
            let got = standard_webhooks::verify(
                &keys,
                signed(id, timestamp, Some(presented.as_bytes())),
                body,
                &clock,
                DEFAULT_TOLERANCE,
            );
            assert_eq!(got, want, "genuine signature {presented:?}");
        }
        let mut other = key.expose().to_vec();
        other.push(1);
        let wrong = standard_webhooks::verify(
            &[Secret::new(other)],
            signed(id, timestamp, Some(genuine.as_bytes())),
            body,
            &clock,
            DEFAULT_TOLERANCE,
        );
        assert_eq!(wrong, Err(VerifyError::Mismatch), "wrong key verified");
    }

    // The provider: verify, then parse the (signed, so trusted) JSON.
    let provider = Json {
        clock: std::sync::Arc::new(clock.clone()),
        tolerance: Duration::from_secs(300),
    };
    let integration = integration(ProviderKind::Json, keys.to_vec());
    let mut headers = HeaderMap::new();
    header(&mut headers, "webhook-id", id);
    header(&mut headers, "webhook-timestamp", timestamp);
    header(&mut headers, "webhook-signature", signature);
    let inbound = Inbound {
        integration: &integration,
        path_and_query: "/v1/webhooks/json/fuzz",
        headers: &headers,
        body,
        received_at: received_at(),
    };
    let verified = provider.verify(&inbound).is_ok();
    let parse = || {
        let verified = Verified {
            form: Vec::new(),
            signed_at: parsed_ts,
        };
        provider.parse(&inbound, verified)
    };
    let parsed = parse();
    let routed = check_route(
        &provider,
        &integration,
        "/v1/webhooks/json/fuzz",
        &headers,
        ["application/json", "APPLICATION/JSON ; charset=UTF-8"],
        body,
        verified,
        &parsed,
    );
    match parsed {
        Ok(draft) => {
            assert_sound_event(&draft);
            assert_eq!(parse().map(|d| d.event_id), Ok(draft.event_id));
            Reached {
                verified,
                parsed: true,
                routed,
            }
        }
        Err(e) => {
            assert_client_error(&e);
            Reached {
                verified,
                parsed: false,
                routed,
            }
        }
    }
}

/// Launch intake: `Authorization header \n JSON body`.
pub fn launch_request(data: &[u8]) -> Reached {
    let [authorization, body] = fields::<2>(data);
    let body = body.unwrap_or_default();
    let mut headers = HeaderMap::new();
    header(&mut headers, "authorization", authorization);
    let token = launch::bearer(&headers);
    if let Some(token) = token {
        assert!(!token.is_empty(), "an empty bearer token");
        assert_eq!(token, token.trim_ascii(), "an untrimmed bearer token");
    }
    let verified = token.is_some();
    match launch::parse(TENANT, body, &headers, received_at()) {
        Ok(draft) => {
            for id in [&draft.request_id, &draft.contact_id, &draft.campaign_id] {
                assert!(!id.is_empty() && id.len() <= MAX_ID_LEN, "id {id:?}");
            }
            assert_eq!(
                draft.command_id,
                ids::gateway::launch_request(TENANT, &draft.request_id),
                "a retried request would get another command id"
            );
            if let Err(e) = AvroCodec.launch_request(draft) {
                panic!("an accepted launch request does not encode: {e}");
            }
            Reached {
                verified,
                parsed: true,
                routed: false,
            }
        }
        Err(e) => {
            assert_client_error(&e);
            Reached {
                verified,
                parsed: false,
                routed: false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fields;

    #[test]
    fn fields_split_at_the_first_newlines_only() {
        assert_eq!(
            fields::<3>(b"a\nb\nc\nd"),
            [Some(&b"a"[..]), Some(b"b"), Some(b"c\nd")]
        );
        assert_eq!(fields::<3>(b"a"), [Some(&b"a"[..]), None, None]);
        assert_eq!(fields::<2>(b"a\n"), [Some(&b"a"[..]), Some(b"")]);
    }
}
