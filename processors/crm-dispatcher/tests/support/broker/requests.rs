//! A log of the requests the CRM simulator got (arrival time, status,
//! body), kept by a middleware in front of the simulator's router, so a
//! test can see when each operation first reached the CRM and what was
//! sent during an outage.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

/// One request to the CRM API, as the simulator got it.
#[derive(Debug, Clone)]
pub struct Logged {
    /// When it arrived.
    pub at: Instant,
    pub status: u16,
    /// Its body: a create's properties and a search's filter name the
    /// operation id.
    pub body: String,
}

/// Every request to the CRM API, in arrival order.
#[derive(Clone, Default)]
pub struct RequestLog(Arc<Mutex<Vec<Logged>>>);

impl RequestLog {
    pub fn entries(&self) -> Vec<Logged> {
        let mut entries = self.0.lock().unwrap().clone();
        entries.sort_by_key(|l| l.at);
        entries
    }
}

/// Records a CRM API request and its answer's status.
pub async fn record(State(log): State<RequestLog>, request: Request, next: Next) -> Response {
    let at = Instant::now();
    if !request.uri().path().starts_with("/crm/") {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    log.0.lock().unwrap().push(Logged {
        at,
        status: response.status().as_u16(),
        body: text,
    });
    response
}
