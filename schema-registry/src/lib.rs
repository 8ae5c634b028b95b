//! callstream and a schema registry, through the Confluent-compatible REST API (Confluent
//! Schema Registry, Apicurio's `/apis/ccompat/v7`, Redpanda, Karapace).
//!
//! - At start a writer [`install`]s: it registers the current schema of every Avro topic under
//!   the Confluent subject `<topic>-value` and tells `callstream_schemas::wire` the ids, so every
//!   record from then on carries the Confluent wire format that downstream deserializers,
//!   Kafka Connect and ksqlDB read. An unreachable registry is waited for with backoff; a
//!   registry that refuses a schema (incompatible with what the subject already holds) stops
//!   the start with the registry's own message. After start the registry costs nothing: ids
//!   are cached, no call on the hot path.
//! - A reader meeting a schema id it does not know (a newer writer's next version) fetches it
//!   once (through the resolver [`install`] sets, or [`SchemaFetcher`] from a blocking
//!   consumer loop) and reads the record through Avro schema resolution, so rolling upgrades
//!   need no dead letter.
//!
//! Without `CALLSTREAM_SCHEMA_REGISTRY_URL` nothing of this runs and records stay in Avro
//! single-object encoding, for small setups without a registry.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use callstream_platform::settings::Settings;
use callstream_platform::topics::{self, TopicValue, Topics};
use callstream_schemas::wire::{self, LearnError};
use callstream_schemas::EventKind;
use serde_json::{json, Value};

/// The setting that turns the registry on: the base URL of its Confluent-compatible API
/// (`http://127.0.0.1:8085/apis/ccompat/v7` on the dev stack). Basic-auth credentials, as
/// Confluent Cloud wants them, go in the URL (`https://KEY:SECRET@host`), which may then come
/// from a file named by `CALLSTREAM_SCHEMA_REGISTRY_URL_FILE`.
pub const URL_SETTING: &str = "CALLSTREAM_SCHEMA_REGISTRY_URL";
const URL_FILE_SETTING: &str = "CALLSTREAM_SCHEMA_REGISTRY_URL_FILE";

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
/// One request's limit: the registry answers in milliseconds when it answers at all.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(15);

/// Why the registry could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No answer (connection refused, timed out): worth waiting for.
    #[error("the schema registry at {url} cannot be reached: {detail}")]
    Unreachable { url: String, detail: String },
    /// The registry refused a schema (HTTP 409: incompatible with the subject's versions; 422:
    /// not valid) or the credentials (401, 403): waiting will not change its mind.
    #[error("the schema registry refused the schema of {subject} (HTTP {status}): {message}")]
    Refused {
        subject: String,
        status: u16,
        message: String,
    },
    /// Any other answer.
    #[error("the schema registry answered HTTP {status} to {what}: {body}")]
    Unexpected {
        what: String,
        status: u16,
        body: String,
    },
    /// The registry has no schema with this id: records that name it are corrupt or come from
    /// another registry.
    #[error("the schema registry has no schema with id {0}")]
    NoSuchId(u32),
    /// The registry's schema cannot be read by this build.
    #[error(transparent)]
    Learn(#[from] LearnError),
    #[error("{URL_SETTING}: {0}")]
    Setting(String),
}

impl RegistryError {
    /// Whether trying again later may succeed (no answer, a server error, rate limiting).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Unreachable { .. } => true,
            Self::Unexpected { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}

/// A client of the registry's Confluent-compatible API.
#[derive(Debug, Clone)]
pub struct RegistryClient {
    base: String,
    http: reqwest::Client,
}

impl RegistryClient {
    /// A client of the API at `base_url` (no trailing slash needed).
    pub fn new(base_url: &str) -> Result<Self, RegistryError> {
        let base = base_url.trim().trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(RegistryError::Setting(format!(
                "{base:?} is not an http:// or https:// URL"
            )));
        }
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| RegistryError::Setting(e.to_string()))?;
        Ok(Self { base, http })
    }

    /// The client the environment asks for; `None` when no registry is configured.
    pub fn from_env() -> Result<Option<Self>, RegistryError> {
        Self::from_settings(&Settings::env())
    }

    /// As [`from_env`](Self::from_env), from any lookup of the same names.
    pub fn from_settings<F: Fn(&str) -> Option<String>>(
        settings: &Settings<F>,
    ) -> Result<Option<Self>, RegistryError> {
        let url = match settings.non_empty(URL_FILE_SETTING) {
            Some(path) => Some(std::fs::read_to_string(path.trim()).map_err(|e| {
                RegistryError::Setting(format!("{URL_FILE_SETTING}={path:?} cannot be read: {e}"))
            })?),
            None => settings.non_empty(URL_SETTING),
        };
        url.map(|url| Self::new(&url)).transpose()
    }

    /// The API's URL with any credentials left out, for messages.
    pub fn url(&self) -> String {
        match (self.base.find("://"), self.base.find('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                format!("{}***@{}", &self.base[..scheme + 3], &self.base[at + 1..])
            }
            _ => self.base.clone(),
        }
    }

    /// Registers `schema` under `subject` (or finds it there) and returns its id.
    pub async fn register(&self, subject: &str, schema: &str) -> Result<u32, RegistryError> {
        let body = json!({"schemaType": "AVRO", "schema": schema});
        let path = format!("/subjects/{subject}/versions");
        let (status, answer) = self.call(reqwest::Method::POST, &path, Some(body)).await?;
        match status {
            200 => id_in(&answer).ok_or_else(|| unexpected(&path, status, &answer)),
            401 | 403 | 409 | 422 => Err(RegistryError::Refused {
                subject: subject.to_owned(),
                status,
                message: message_in(&answer),
            }),
            _ => Err(unexpected(&path, status, &answer)),
        }
    }

    /// The schema text of `id`.
    pub async fn schema(&self, id: u32) -> Result<String, RegistryError> {
        let path = format!("/schemas/ids/{id}");
        let (status, answer) = self.call(reqwest::Method::GET, &path, None).await?;
        match status {
            200 => answer["schema"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| unexpected(&path, status, &answer)),
            404 => Err(RegistryError::NoSuchId(id)),
            _ => Err(unexpected(&path, status, &answer)),
        }
    }

    /// Whether `schema` could be registered under `subject` now (the registry's own check
    /// against the subject's versions and compatibility level); `Ok(Err(reasons))` when not.
    pub async fn check_compatibility(
        &self,
        subject: &str,
        schema: &str,
    ) -> Result<Result<(), Vec<String>>, RegistryError> {
        let body = json!({"schemaType": "AVRO", "schema": schema});
        let path = format!("/compatibility/subjects/{subject}/versions/latest?verbose=true");
        let (status, answer) = self.call(reqwest::Method::POST, &path, Some(body)).await?;
        match status {
            200 if answer["is_compatible"] == true => Ok(Ok(())),
            200 => Ok(Err(answer["messages"]
                .as_array()
                .map(|m| m.iter().map(|v| v.to_string()).collect())
                .unwrap_or_default())),
            409 => Ok(Err(vec![message_in(&answer)])),
            // A subject without versions takes any schema.
            404 => Ok(Ok(())),
            _ => Err(unexpected(&path, status, &answer)),
        }
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), RegistryError> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("Accept", CONTENT_TYPE);
        if let Some(body) = body {
            request = request
                .header("Content-Type", CONTENT_TYPE)
                .body(body.to_string());
        }
        let unreachable = |e: reqwest::Error| RegistryError::Unreachable {
            url: self.url(),
            detail: e.without_url().to_string(),
        };
        let answer = request.send().await.map_err(unreachable)?;
        let status = answer.status().as_u16();
        let text = answer.text().await.map_err(unreachable)?;
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ok((status, value))
    }
}

fn id_in(answer: &Value) -> Option<u32> {
    answer["id"].as_u64().and_then(|id| u32::try_from(id).ok())
}

fn message_in(answer: &Value) -> String {
    answer["message"]
        .as_str()
        .map_or_else(|| answer.to_string(), str::to_owned)
}

fn unexpected(what: &str, status: u16, answer: &Value) -> RegistryError {
    RegistryError::Unexpected {
        what: what.to_owned(),
        status,
        body: answer.to_string(),
    }
}

/// The Avro value subjects of `topics` (`<physical topic>-value`) and the event type each
/// carries, from the topics-as-code declaration.
pub fn value_subjects(topics: &Topics) -> Vec<(String, EventKind)> {
    topics::ALL
        .iter()
        .filter_map(|(logical, _)| match topics::value_of(logical)? {
            TopicValue::Avro(stem) => {
                let kind = EventKind::ALL.iter().find(|k| k.file_stem() == stem)?;
                Some((format!("{}-value", topics.name(logical)), *kind))
            }
            TopicValue::Json | TopicValue::Copies => None,
        })
        .collect()
}

/// Registers the current schema of every Avro topic of `topics` under its value subject and
/// makes this process write the Confluent wire format with those ids. While the registry does
/// not answer, waits with backoff (saying so) up to `patience`; a refusal ends it at once.
pub async fn install(
    client: &RegistryClient,
    topics: &Topics,
    patience: Duration,
) -> Result<Vec<(EventKind, u32)>, RegistryError> {
    let give_up = Instant::now() + patience;
    let mut ids: Vec<(EventKind, u32)> = Vec::new();
    for (subject, kind) in value_subjects(topics) {
        let id = with_backoff(give_up, &format!("registering {subject}"), || {
            client.register(&subject, kind.schema_json())
        })
        .await?;
        // One id per kind: a registry gives the same text the same id under every subject.
        if !ids.iter().any(|(k, _)| *k == kind) {
            ids.push((kind, id));
        }
    }
    wire::use_confluent_ids(&ids);
    // Every decoder of the process (the projections, a tally, not only the runtime's gate)
    // fetches a schema id it meets for the first time.
    match SchemaFetcher::new(client.clone()) {
        Ok(_) if wire::has_resolver() => {}
        Ok(fetcher) => {
            wire::set_resolver(Box::new(move |id| {
                fetcher
                    .fetch_blocking(id)
                    .map_err(|error| wire::ResolveFailure {
                        transient: error.is_transient(),
                        detail: error.to_string(),
                    })
            }));
        }
        Err(error) => {
            tracing::warn!(%error, "no schema resolver: records of a schema id this process did not register will not decode")
        }
    }
    tracing::info!(registry = %client.url(), subjects = ids.len(), "schemas registered; writing the Confluent wire format");
    Ok(ids)
}

/// Calls `attempt` until it succeeds, fails for good, or `give_up` passes.
async fn with_backoff<T, F, Fut>(
    give_up: Instant,
    what: &str,
    mut attempt: F,
) -> Result<T, RegistryError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, RegistryError>>,
{
    let mut backoff = FIRST_BACKOFF;
    loop {
        match attempt().await {
            Err(error) if error.is_transient() && Instant::now() + backoff < give_up => {
                tracing::warn!(%error, retry_in = ?backoff, "{what}: the schema registry did not answer; waiting");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            other => return other,
        }
    }
}

/// Makes records decodable for a blocking consumer loop (the runtime's event loop): given a
/// record's value, fetches and learns its schema id if it is one this process does not know
/// yet, waiting while the registry does not answer. Its own small runtime and client, so it
/// may be called from any thread.
pub struct SchemaFetcher {
    client: RegistryClient,
    /// Always `Some` but in `drop`, which takes it to shut it down without blocking: a
    /// fetcher may be dropped inside an async context, where dropping a runtime panics.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for SchemaFetcher {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for SchemaFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaFetcher")
            .field("registry", &self.client.url())
            .finish()
    }
}

impl SchemaFetcher {
    pub fn new(client: RegistryClient) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // A client of its own: a connection pool belongs to the runtime that opened it.
        let client = RegistryClient::new(&client.base).map_err(std::io::Error::other)?;
        Ok(Self {
            client,
            runtime: Some(runtime),
        })
    }

    /// The registry's text of schema `id`, fetched on a thread of its own so a caller inside
    /// a tokio runtime can block on it.
    pub fn fetch_blocking(&self, id: u32) -> Result<String, RegistryError> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| match &self.runtime {
                    Some(runtime) => runtime.block_on(self.client.schema(id)),
                    None => Err(RegistryError::Unreachable {
                        url: self.client.url(),
                        detail: "the fetcher is shutting down".into(),
                    }),
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(RegistryError::Unreachable {
                        url: self.client.url(),
                        detail: "the fetching thread panicked".into(),
                    })
                })
        })
    }

    /// Returns once `value` can be decoded, or it never will be (no such id, a schema this
    /// build cannot read: the decode then says why), or `stop` is set. Waits out an
    /// unreachable registry: a record is never dead-lettered for the registry's absence.
    pub fn prepare(&self, value: &[u8], stop: &AtomicBool) -> Prepared {
        let Some(id) = wire::schema_id(value) else {
            return Prepared::Ready;
        };
        if wire::knows_id(id) {
            return Prepared::Ready;
        }
        let mut backoff = FIRST_BACKOFF;
        loop {
            match self
                .fetch_blocking(id)
                .and_then(|schema| Ok(wire::learn(id, &schema)?))
            {
                Ok(kind) => {
                    tracing::info!(
                        id,
                        event_type = kind.name(),
                        "learned a writer schema from the registry"
                    );
                    return Prepared::Ready;
                }
                Err(error) if error.is_transient() => {
                    tracing::warn!(id, %error, retry_in = ?backoff, "a record names a schema id not known yet and the registry does not answer; holding the record");
                }
                Err(error) => {
                    tracing::error!(id, %error, "a record names a schema that cannot be used");
                    return Prepared::Ready;
                }
            }
            let until = Instant::now() + backoff;
            while Instant::now() < until {
                if stop.load(Ordering::SeqCst) {
                    return Prepared::Stopped;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// The runtime asks before handling each record: one whose schema id is new to this process
/// waits for its schema.
impl callstream_runtime::ValueGate for SchemaFetcher {
    fn admit(&self, value: &[u8], stop: &AtomicBool) -> bool {
        self.prepare(value, stop) == Prepared::Ready
    }
}

/// How [`SchemaFetcher::prepare`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// Decode the record now.
    Ready,
    /// The caller is stopping; the record must not be handled (nor its offset committed).
    Stopped,
}

#[cfg(test)]
mod tests;
