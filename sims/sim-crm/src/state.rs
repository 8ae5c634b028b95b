//! The CRM simulator's shared state: objects ([`Db`]), the gatekeeper
//! (outage window, tokens, rolling limits, seeded fault draws and request
//! counters) and the behaviour, changeable at runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::config::{ConfigError, CrmBehaviour, SimCrmConfig};
use crate::db::Db;
use crate::ratelimit::{Refused, Rolling};

/// The simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    /// Binding the listen address, or serving on it.
    #[error(transparent)]
    Http(#[from] callstream_platform::http::ServeError),
}

/// The search limit's window: HubSpot's is per second.
pub const SEARCH_WINDOW: Duration = Duration::from_secs(1);

/// Request counters of `GET /_sim/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RequestStats {
    /// Every request to the CRM API.
    pub requests_total: u64,
    pub refused_outage: u64,
    pub refused_unauthorized: u64,
    /// 429s sent.
    pub throttled: u64,
    /// Of those, searches refused by the per-second search limit.
    pub search_throttled: u64,
    /// Injected 5xx answers (nothing applied).
    pub injected_errors: u64,
    /// Requests held `slow_ms` before being handled.
    pub slow_answers: u64,
    /// Writes applied and then answered `timeout_ms` late.
    pub late_answers: u64,
    pub first_request_at: Option<DateTime<Utc>>,
    pub last_request_at: Option<DateTime<Utc>>,
}

/// The fault draws of one admitted request.
#[derive(Debug, Clone, Copy)]
pub struct Draws {
    pub error: f64,
    pub error_code: f64,
    pub slow: f64,
    pub timeout: f64,
    /// A standard normal draw: a create's search lag (see
    /// [`CrmBehaviour::search_lag`]).
    pub lag_z: f64,
}

#[derive(Default)]
pub(crate) struct Gate {
    pub limits: HashMap<String, Rolling>,
    /// Each token's searches in the rolling second.
    pub search_limits: HashMap<String, Rolling>,
    pub stats: RequestStats,
    next_request: u64,
}

/// Everything handlers share; cheap to clone.
#[derive(Clone)]
pub struct CrmState(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    pub tokens: Vec<String>,
    pub seed: u64,
    pub auto_create_contacts: bool,
    pub behaviour: RwLock<Arc<CrmBehaviour>>,
    pub outage: Mutex<Option<(Instant, Instant)>>,
    pub gate: Mutex<Gate>,
    pub db: Db,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counters may be half-updated after a panic; keep serving.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A short, non-secret name for a token in the stats.
pub fn token_label(token: &str) -> String {
    let d = Sha256::digest(token.as_bytes());
    d[..4].iter().map(|b| format!("{b:02x}")).collect()
}

impl CrmState {
    pub fn new(config: &SimCrmConfig) -> Result<Self, StartError> {
        config.behaviour.validate()?;
        let outage = (config.outage_for_ms > 0).then(|| {
            let start = Instant::now() + Duration::from_millis(config.outage_at_ms);
            (start, start + Duration::from_millis(config.outage_for_ms))
        });
        Ok(Self(Arc::new(Inner {
            tokens: config.tokens.clone(),
            seed: config.seed,
            auto_create_contacts: config.auto_create_contacts,
            behaviour: RwLock::new(Arc::new(config.behaviour.clone())),
            outage: Mutex::new(outage),
            gate: Mutex::new(Gate::default()),
            db: Db::default(),
        })))
    }

    pub fn db(&self) -> &Db {
        &self.0.db
    }

    pub fn behaviour(&self) -> Arc<CrmBehaviour> {
        let g = self.0.behaviour.read().unwrap_or_else(|e| e.into_inner());
        Arc::clone(&g)
    }

    pub fn set_behaviour(&self, b: CrmBehaviour) -> Result<(), ConfigError> {
        b.validate()?;
        *self.0.behaviour.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(b);
        Ok(())
    }

    /// All requests answer 503 from `start` for `length`.
    pub fn set_outage(&self, start: Instant, length: Duration) {
        *lock(&self.0.outage) = (!length.is_zero()).then_some((start, start + length));
    }

    /// Remaining outage at `now`, if one is on.
    pub fn outage_left(&self, now: Instant) -> Option<Duration> {
        let window = *lock(&self.0.outage);
        window
            .filter(|(start, end)| *start <= now && now < *end)
            .map(|(_, end)| end - now)
    }

    /// Whether `token` may use the API.
    pub fn accepts(&self, token: &str) -> bool {
        !token.is_empty() && (self.0.tokens.is_empty() || self.0.tokens.iter().any(|t| t == token))
    }

    /// Counts one request; `f` sees the counters.
    pub fn count(&self, f: impl FnOnce(&mut RequestStats)) {
        let mut g = lock(&self.0.gate);
        let now = callstream_platform::clock::now_utc();
        let s = &mut g.stats;
        s.requests_total += 1;
        s.first_request_at.get_or_insert(now);
        s.last_request_at = Some(now);
        f(s);
    }

    /// Bumps a counter without counting a new request.
    pub fn note(&self, f: impl FnOnce(&mut RequestStats)) {
        f(&mut lock(&self.0.gate).stats);
    }

    /// Admits an authenticated request under its token's rolling limit;
    /// on admission, the requests left and this request's fault draws.
    pub fn admit(&self, token: &str, now: Instant) -> Result<(u32, Draws), Refused> {
        let b = self.behaviour();
        let window = Duration::from_millis(b.rate_limit_window_ms);
        let mut g = lock(&self.0.gate);
        let left =
            g.limits
                .entry(token.to_string())
                .or_default()
                .admit(now, window, b.rate_limit_max)?;
        let index = g.next_request;
        g.next_request += 1;
        let mut seed = [0u8; 32];
        let d = Sha256::new()
            .chain_update(b"callstream-sim-crm/v1")
            .chain_update(self.0.seed.to_le_bytes())
            .chain_update(index.to_le_bytes())
            .finalize();
        seed.copy_from_slice(&d);
        let mut rng = StdRng::from_seed(seed);
        // Box-Muller: two uniform draws make one standard normal one.
        let (u1, u2): (f64, f64) = (rng.random(), rng.random());
        let lag_z = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let draws = Draws {
            error: rng.random(),
            error_code: rng.random(),
            slow: rng.random(),
            timeout: rng.random(),
            lag_z,
        };
        Ok((left, draws))
    }

    /// Admits a search under its token's per-second search limit (before
    /// the ten-second limit: a refused search was not served).
    pub fn admit_search(&self, token: &str, now: Instant) -> Result<(), Refused> {
        let max = self.behaviour().search_rate_max;
        let mut g = lock(&self.0.gate);
        g.search_limits
            .entry(token.to_string())
            .or_default()
            .admit(now, SEARCH_WINDOW, max)
            .map(|_| ())
    }

    /// Per token (by label): the most searches that arrived in any rolling
    /// second, refused ones included, and the searches refused.
    pub fn search_limits(&self) -> Vec<(String, u32, u64)> {
        let g = lock(&self.0.gate);
        let mut out: Vec<_> = g
            .search_limits
            .iter()
            .map(|(t, r)| (token_label(t), r.max_arrived_in_window, r.refused_total))
            .collect();
        out.sort();
        out
    }

    /// Per token (by label): (arrived, refused, max arrived in a window,
    /// max admitted in a window).
    pub fn limits(&self) -> Vec<(String, u64, u64, u32, u32)> {
        let g = lock(&self.0.gate);
        let mut out: Vec<_> = g
            .limits
            .iter()
            .map(|(t, r)| {
                (
                    token_label(t),
                    r.arrived_total,
                    r.refused_total,
                    r.max_arrived_in_window,
                    r.max_admitted_in_window,
                )
            })
            .collect();
        out.sort();
        out
    }

    pub fn request_stats(&self) -> RequestStats {
        lock(&self.0.gate).stats.clone()
    }

    /// Forgets objects, counters, windows and the outage; the fault draws
    /// start again from the first request.
    pub fn reset(&self) {
        *lock(&self.0.gate) = Gate::default();
        *lock(&self.0.outage) = None;
        self.0.db.reset();
    }
}
