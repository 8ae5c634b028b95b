//! The router: Twilio's call endpoints, the simulator's own `/_sim/*`
//! endpoints, and `/healthz`. `app(state)` is all a test needs to drive
//! it without a socket.
//!
//! Order of checks on the Twilio endpoints, as Twilio does them:
//! credentials (401), account in the path (404), parameters (400), then
//! the injected create fault (5xx), then the call.

use std::borrow::Cow;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use subtle::ConstantTimeEq;

use crate::admin;
use crate::callback::CallbackTarget;
use crate::list::ListQuery;
use crate::plan::{Amd, Event, EventSet};
use crate::state::{Created, NewCall, SimState};
use crate::twilio::{self, TwilioError};

/// The whole HTTP surface.
pub fn app(state: SimState) -> Router {
    Router::new()
        .route(
            "/2010-04-01/Accounts/{account}/Calls.json",
            get(list_calls).post(create_call),
        )
        .route(
            "/2010-04-01/Accounts/{account}/Calls/{file}",
            get(fetch_call),
        )
        .route(
            "/2010-04-01/Accounts/{account}/Calls/{sid}/Events.json",
            get(call_events),
        )
        .route("/healthz", get(|| async { "ok" }))
        .merge(admin::routes())
        .with_state(state)
}

fn authorized(state: &SimState, headers: &HeaderMap) -> bool {
    let Some(encoded) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    else {
        return false;
    };
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
        return false;
    };
    let expected = format!("{}:{}", state.0.account_sid, state.0.auth_token);
    decoded.len() == expected.len() && bool::from(decoded.ct_eq(expected.as_bytes()))
}

/// Credentials, then the account the path names.
fn check_access(
    state: &SimState,
    headers: &HeaderMap,
    account: &str,
    path: impl FnOnce() -> String,
) -> Result<(), TwilioError> {
    if !authorized(state, headers) {
        return Err(TwilioError::authenticate());
    }
    if account != state.account_sid() {
        return Err(TwilioError::not_found(&path()));
    }
    Ok(())
}

/// `+` and 2 to 15 digits, or a `sip:`/`client:` address.
/// Twilio's magic number for "invalid": a create to it is refused with 400 and code 21217, so
/// a client's handling of a permanent refusal can be exercised (Twilio answers it so for test
/// credentials).
pub const INVALID_TEST_NUMBER: &str = "+15005550001";

fn valid_number(n: &str) -> bool {
    if n.starts_with("sip:") || n.starts_with("client:") {
        return n.len() > 6;
    }
    n.strip_prefix('+').is_some_and(|digits| {
        (2..=15).contains(&digits.len())
            && digits.chars().all(|c| c.is_ascii_digit())
            && !digits.starts_with('0')
    })
}

/// Reads and validates the create form.
fn read_create(body: &[u8]) -> Result<NewCall, TwilioError> {
    // Borrowed where nothing was escaped: a create has a dozen pairs.
    let form: Vec<(Cow<'_, str>, Cow<'_, str>)> = form_urlencoded::parse(body).collect();
    let first = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    };
    let to =
        first("To").ok_or_else(|| TwilioError::invalid(21201, "No 'To' number is specified"))?;
    if !valid_number(to) {
        return Err(TwilioError::invalid(
            21211,
            format!("Invalid 'To' Phone Number: {to}"),
        ));
    }
    if to == INVALID_TEST_NUMBER {
        return Err(TwilioError::invalid(
            21217,
            "Phone number does not appear to be valid",
        ));
    }
    let from = first("From")
        .ok_or_else(|| TwilioError::invalid(21213, "Caller phone number is required"))?;
    if !valid_number(from) {
        return Err(TwilioError::invalid(21212, "Invalid Caller Phone Number"));
    }
    match (first("Url"), first("Twiml")) {
        (None, None) => {
            return Err(TwilioError::invalid(21205, "Url parameter is required"));
        }
        (Some(url), _) if crate::callback::check_url(url).is_err() => {
            return Err(TwilioError::invalid(21205, "Url is not a valid URL"));
        }
        _ => {}
    }
    let target = first("StatusCallback")
        .map(CallbackTarget::parse)
        .transpose()
        .map_err(|_| TwilioError::invalid(21609, "StatusCallback is not a valid URL"))?;
    let mut events = EventSet::NONE;
    let mut named = false;
    for (_, value) in form.iter().filter(|(k, _)| k == "StatusCallbackEvent") {
        // Repeated or space-separated, as Twilio's libraries send it.
        for word in value.split_whitespace() {
            let event = Event::parse(word)
                .ok_or_else(|| TwilioError::invalid(21626, "Invalid 'StatusCallbackEvent'"))?;
            events.insert(event);
            named = true;
        }
    }
    if !named {
        events = EventSet::DEFAULT;
    }
    let amd = match first("MachineDetection") {
        None => Amd::Off,
        Some("Enable") => Amd::Enable,
        Some("DetectMessageEnd") => Amd::DetectMessageEnd,
        Some(_) => {
            return Err(TwilioError::invalid(
                21636,
                "MachineDetection must be Enable or DetectMessageEnd",
            ))
        }
    };
    Ok(NewCall {
        to: to.to_string(),
        from: from.to_string(),
        target,
        events,
        amd,
    })
}

async fn create_call(
    State(state): State<SimState>,
    Path(account): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, TwilioError> {
    let checked = check_access(&state, &headers, &account, || {
        format!("{}.json", twilio::calls_path(&account))
    })
    .and_then(|()| read_create(&body));
    let call = match checked {
        Ok(call) => call,
        Err(e) => {
            state.store().count_now(|s| s.creates_rejected += 1);
            return Err(e);
        }
    };
    match state.create(call) {
        Created::Failed(status) => Err(TwilioError::server(status)),
        Created::Accepted {
            record,
            hold,
            error_after_accept,
        } => {
            if let Some(hold) = hold {
                // The call is already playing; only the answer is late.
                tokio::time::sleep(hold).await;
            }
            if let Some(status) = error_after_accept {
                // The call is playing; the answer says otherwise.
                return Err(TwilioError::server(status));
            }
            // Serialized from the record, with no `Value` in between.
            let body = twilio::CallResource::of(&account, &record);
            Ok((StatusCode::CREATED, Json(body)).into_response())
        }
    }
}

async fn fetch_call(
    State(state): State<SimState>,
    Path((account, file)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, TwilioError> {
    let path = || format!("{}/{file}", twilio::calls_path(&account));
    check_access(&state, &headers, &account, path)?;
    let record = file
        .strip_suffix(".json")
        .and_then(|sid| state.store().get(sid))
        .ok_or_else(|| TwilioError::not_found(&path()))?;
    Ok(Json(twilio::call_json(&account, &record)).into_response())
}

async fn call_events(
    State(state): State<SimState>,
    Path((account, sid)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, TwilioError> {
    let path = || format!("{}/{sid}/Events.json", twilio::calls_path(&account));
    check_access(&state, &headers, &account, path)?;
    let record = state
        .store()
        .get(&sid)
        .ok_or_else(|| TwilioError::not_found(&path()))?;
    Ok(Json(twilio::events_json(&account, &record)).into_response())
}

async fn list_calls(
    State(state): State<SimState>,
    Path(account): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, TwilioError> {
    check_access(&state, &headers, &account, || {
        format!("{}.json", twilio::calls_path(&account))
    })?;
    let q = ListQuery::parse(query.as_deref().unwrap_or(""))
        .map_err(|e| TwilioError::invalid(20001, format!("Invalid {}: {}", e.0, e.1)))?;
    let all = state.store().select(|c| q.matches(c));
    let start = q.page.saturating_mul(q.page_size).min(all.len());
    let end = start.saturating_add(q.page_size).min(all.len());
    let body = twilio::list_json(
        &account,
        &all[start..end],
        q.page,
        q.page_size,
        end < all.len(),
        &q.filters,
    );
    Ok(Json(body).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let cases = [
            ("+15550001111", true),
            ("+442071838750", true),
            ("15550001111", false),
            ("+1555 0001111", false),
            ("+0123", false),
            ("+1234567890123456", false),
            ("client:alice", true),
            ("sip:a@b.c", true),
        ];
        for (n, want) in cases {
            assert_eq!(valid_number(n), want, "{n}");
        }
    }

    #[test]
    fn create_forms() {
        let ok = |body: &str| read_create(body.as_bytes());
        let base = "To=%2B15550001111&From=%2B15550002222&Url=https%3A%2F%2Fx.test%2Ft";
        let call = ok(base).unwrap();
        assert_eq!(call.events, EventSet::DEFAULT);
        assert_eq!(call.amd, Amd::Off);
        let all = ok(&format!(
            "{base}&StatusCallback=https%3A%2F%2Fgw.test%2Fcb%3Flaunch_id%3DL1&StatusCallbackEvent=initiated%20ringing&StatusCallbackEvent=answered&StatusCallbackEvent=completed&MachineDetection=DetectMessageEnd"
        ))
        .unwrap();
        assert_eq!(all.events, EventSet::ALL);
        assert_eq!(all.amd, Amd::DetectMessageEnd);
        assert_eq!(all.target.unwrap().launch_id.as_deref(), Some("L1"));
        let cases = [
            ("From=%2B15550002222&Url=https%3A%2F%2Fx.test", 21201),
            ("To=555&From=%2B15550002222&Url=https%3A%2F%2Fx.test", 21211),
            (
                "To=%2B15005550001&From=%2B15550002222&Url=https%3A%2F%2Fx.test",
                21217,
            ),
            ("To=%2B15550001111&Url=https%3A%2F%2Fx.test", 21213),
            ("To=%2B15550001111&From=%2B15550002222", 21205),
            (
                "To=%2B15550001111&From=%2B15550002222&Twiml=%3CResponse%2F%3E&StatusCallback=nope",
                21609,
            ),
            (
                "To=%2B15550001111&From=%2B15550002222&Twiml=x&StatusCallbackEvent=hung-up",
                21626,
            ),
            (
                "To=%2B15550001111&From=%2B15550002222&Twiml=x&MachineDetection=yes",
                21636,
            ),
        ];
        for (body, code) in cases {
            let err = ok(body).unwrap_err();
            assert_eq!(err.code, code, "{body}");
            assert_eq!(err.status, StatusCode::BAD_REQUEST);
        }
    }
}
