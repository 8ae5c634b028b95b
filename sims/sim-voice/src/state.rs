//! The simulator's shared state and the one operation that matters:
//! accepting a call. `create` decides everything about the call up front
//! (its fault, its plan), records it, and starts its playout task before
//! the HTTP answer leaves, so a call whose answer is held back, or whose
//! client gave up, still plays out.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::callback::{CallFacts, CallbackTarget};
use crate::config::{Behaviour, ConfigError, SimVoiceConfig};
use crate::plan::{self, Amd, CallStatus, CreateFault, Draws, EventSet, PlanInput};
use crate::store::{CallRecord, Store};
use crate::{playout, seed, signing};

/// The simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    #[error("building the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// Binding the listen address, or serving on it.
    #[error(transparent)]
    Http(#[from] callstream_platform::http::ServeError),
}

/// Everything handlers and playouts share; cheap to clone.
#[derive(Clone)]
pub struct SimState(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    pub account_sid: String,
    pub auth_token: String,
    pub analysis_url: Option<String>,
    pub analysis_key: Vec<u8>,
    pub seed: u64,
    pub salt: u64,
    pub behaviour: RwLock<Arc<Behaviour>>,
    pub store: Store,
    pub client: reqwest::Client,
}

/// A validated create request.
#[derive(Debug, Clone)]
pub struct NewCall {
    pub to: String,
    pub from: String,
    pub target: Option<CallbackTarget>,
    pub events: EventSet,
    pub amd: Amd,
}

/// What became of a create.
#[derive(Debug)]
pub enum Created {
    /// The call exists and plays out; answer after `hold` if set.
    Accepted {
        record: Box<CallRecord>,
        hold: Option<Duration>,
        /// Answer this 5xx although the call exists (the edge fault).
        error_after_accept: Option<u16>,
    },
    /// The injected failure: answer this 5xx, no call exists.
    Failed(u16),
}

impl SimState {
    pub fn new(config: &SimVoiceConfig) -> Result<Self, StartError> {
        config.validate()?;
        let analysis_key = signing::decode_whsec(&config.analysis_secret)
            .map_err(|_| ConfigError::Secret("analysis_secret"))?;
        let salt = config.sid_salt.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let client = reqwest::Client::builder()
            .user_agent("TwilioProxy/1.1")
            .build()?;
        Ok(Self(Arc::new(Inner {
            account_sid: config.account_sid.clone(),
            auth_token: config.auth_token.clone(),
            analysis_url: config.analysis_url.clone(),
            analysis_key,
            seed: config.seed,
            salt,
            behaviour: RwLock::new(Arc::new(config.behaviour.clone())),
            store: Store::default(),
            client,
        })))
    }

    pub fn store(&self) -> &Store {
        &self.0.store
    }

    pub fn account_sid(&self) -> &str {
        &self.0.account_sid
    }

    /// The behaviour new calls get (calls already planned keep theirs).
    pub fn behaviour(&self) -> Arc<Behaviour> {
        let guard = self.0.behaviour.read().unwrap_or_else(|e| e.into_inner());
        Arc::clone(&guard)
    }

    pub fn set_behaviour(&self, b: Behaviour) -> Result<(), ConfigError> {
        b.validate()?;
        let mut guard = self.0.behaviour.write().unwrap_or_else(|e| e.into_inner());
        *guard = Arc::new(b);
        Ok(())
    }

    /// Accepts (or, by the fault, refuses) one call and starts its playout.
    /// Must run inside a Tokio runtime.
    pub fn create(&self, call: NewCall) -> Created {
        let b = self.behaviour();
        let store = self.store();
        let window = Duration::from_millis(b.burst_window_ms);
        let (generation, index, in_window) = store.begin_create(Instant::now(), window);
        let draws = Draws::from_rng(&mut seed::create_rng(self.0.seed, index));
        let fault = plan::create_fault(&b, &draws);
        let hold = match fault {
            CreateFault::Error(status) => {
                store.count(generation, |s| s.creates_failed += 1);
                return Created::Failed(status);
            }
            CreateFault::Slow => Some(Duration::from_millis(b.create_slow_ms)),
            CreateFault::AcceptedThenError(_) | CreateFault::None => None,
        };
        let error_after_accept = match fault {
            CreateFault::AcceptedThenError(status) => Some(status),
            _ => None,
        };
        let contact_known = call.target.as_ref().is_some_and(|t| t.contact_id.is_some());
        let analysis = self.0.analysis_url.is_some() && contact_known;
        let events = if call.target.is_some() {
            call.events
        } else {
            EventSet::NONE
        };
        let input = PlanInput {
            in_window,
            events,
            amd: call.amd,
            analysis,
        };
        let plan = plan::plan(&b, input, &draws);
        let sid = seed::call_sid(self.0.seed, self.0.salt, index);
        let now = callstream_platform::clock::now_utc();
        let record = CallRecord {
            index,
            sid: sid.clone(),
            to: call.to.clone(),
            from: call.from.clone(),
            created_at: now,
            updated_at: now,
            start_time: now,
            end_time: None,
            status: CallStatus::Queued,
            duration: None,
            answered_by: None,
            target: call.target.clone(),
            outcome: plan.outcome,
            intent: plan.intent.map(|(i, _)| i),
            completion_dropped: plan.completion_dropped,
            vanished: false,
            requests: Vec::new(),
            accepted_event_ids: Vec::new(),
        };
        store.insert(generation, record.clone());
        store.count(generation, |s| {
            s.callbacks_dropped += u64::from(plan.dropped_callback);
            s.analysis_dropped += u64::from(plan.dropped_analysis);
            s.analysis_skipped += u64::from(plan.intent.is_some() && !analysis);
            s.creates_delayed += u64::from(hold.is_some());
        });
        let facts = CallFacts {
            sid,
            account_sid: self.0.account_sid.clone(),
            to: call.to,
            from: call.from,
            target: call.target,
            created_at: now,
        };
        tokio::spawn(playout::play(
            self.clone(),
            generation,
            facts,
            plan,
            b,
            Instant::now(),
        ));
        if error_after_accept.is_some() {
            store.count(generation, |s| s.creates_accepted_then_failed += 1);
        }
        Created::Accepted {
            record: Box::new(record),
            hold,
            error_after_accept,
        }
    }
}
