//! What every CRM API request passes before (and after) it is handled, in
//! this order: the outage window (503), the bearer token (401), the token's
//! rolling limit (429 with `Retry-After`), then the request's seeded fault
//! draws: an injected 5xx (nothing applied), a slow start, or, for writes,
//! the write applied and its answer held back past the client's timeout.
//!
//! Searches pass their own limit first (5 per second per token, `429` with
//! policy `SECONDLY`), as HubSpot's do. Every other answer carries HubSpot's
//! `X-HubSpot-RateLimit-*` headers once the token is known; search answers
//! carry none, as HubSpot's do not.

use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::CrmError;
use crate::state::CrmState;

fn bearer(headers: &HeaderMap) -> &str {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map_or("", str::trim)
}

/// Writes are the requests that change objects: creates and updates.
fn is_write(method: &Method, path: &str) -> bool {
    *method == Method::PATCH || (*method == Method::POST && !path.ends_with("/search"))
}

fn is_search(path: &str) -> bool {
    path.ends_with("/search")
}

fn limit_headers(response: &mut Response, max: u32, window_ms: u64, left: u32) {
    let h = response.headers_mut();
    let pairs = [
        (
            "x-hubspot-ratelimit-interval-milliseconds",
            window_ms.to_string(),
        ),
        ("x-hubspot-ratelimit-max", max.to_string()),
        ("x-hubspot-ratelimit-remaining", left.to_string()),
    ];
    for (name, value) in pairs {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
}

/// The middleware on every `/crm/v3` route.
pub async fn gate(State(state): State<CrmState>, request: Request, next: Next) -> Response {
    let now = Instant::now();
    state.count(|_| {});
    if state.outage_left(now).is_some() {
        state.note(|s| s.refused_outage += 1);
        return CrmError::Outage.into_response();
    }
    let token = bearer(request.headers()).to_string();
    if !state.accepts(&token) {
        state.note(|s| s.refused_unauthorized += 1);
        return CrmError::Unauthorized.into_response();
    }
    let b = state.behaviour();
    let search = is_search(request.uri().path());
    if search && state.admit_search(&token, now).is_err() {
        state.note(|s| {
            s.throttled += 1;
            s.search_throttled += 1;
        });
        return CrmError::SearchRateLimited.into_response();
    }
    let (left, draws) = match state.admit(&token, now) {
        Ok(admitted) => admitted,
        Err(refused) => {
            state.note(|s| s.throttled += 1);
            let mut r = CrmError::RateLimited {
                retry_after: refused.retry_after,
            }
            .into_response();
            if !search {
                limit_headers(&mut r, b.rate_limit_max, b.rate_limit_window_ms, 0);
            }
            return r;
        }
    };
    if draws.error < b.error_share {
        state.note(|s| s.injected_errors += 1);
        let code = [500, 502, 503][((draws.error_code * 3.0) as usize).min(2)];
        return CrmError::Injected(code).into_response();
    }
    if draws.slow < b.slow_share {
        state.note(|s| s.slow_answers += 1);
        tokio::time::sleep(Duration::from_millis(b.slow_ms)).await;
    }
    let write = is_write(request.method(), request.uri().path());
    let mut request = request;
    request.extensions_mut().insert(draws);
    let mut response = next.run(request).await;
    if write && response.status().is_success() && draws.timeout < b.timeout_share {
        // Applied: only the answer is late. A client that gave up cannot
        // tell this from a write that never happened.
        state.note(|s| s.late_answers += 1);
        tokio::time::sleep(Duration::from_millis(b.timeout_ms)).await;
    }
    // HubSpot's search answers carry no rate-limit headers.
    if !search {
        limit_headers(
            &mut response,
            b.rate_limit_max,
            b.rate_limit_window_ms,
            left,
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_creates_and_updates() {
        let cases = [
            (Method::POST, "/crm/v3/objects/tasks", true),
            (Method::PATCH, "/crm/v3/objects/contacts/1", true),
            (Method::POST, "/crm/v3/objects/tasks/search", false),
            (Method::GET, "/crm/v3/objects/tasks/1", false),
        ];
        for (m, p, want) in cases {
            assert_eq!(is_write(&m, p), want, "{m} {p}");
        }
    }

    #[test]
    fn bearer_tokens() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), "");
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), "");
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer pat-1"),
        );
        assert_eq!(bearer(&h), "pat-1");
    }
}
