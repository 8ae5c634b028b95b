//! The gateway under test, in this process: its own topics behind a fresh
//! prefix, one Twilio integration with the rate limit raised out of the way,
//! and `callstream_gateway::serve` on `127.0.0.1:0` on a tokio runtime of its
//! own (threads named `gw-server`, so their CPU can be told apart from the
//! load generator's). In a framing comparison's child it first switches the
//! process to its framing: for Confluent, the value schemas of its topics
//! registered with the stack's registry, as `callstream gateway` does at start.

use std::num::NonZeroU32;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use callstream_gateway::config::{IntegrationConfig, RateLimit};
use callstream_gateway::event::ProviderKind;
use callstream_gateway::secret::Secret;
use callstream_gateway::{AppState, GatewayConfig};
use callstream_platform::topics::{CALL_EVENTS, CONTACT_COMMANDS};
use callstream_platform::{KafkaSettings, Topics};
use tokio::sync::oneshot;

use callstream_bench::framing::{self, Framing};
use callstream_bench::kafka::{create_topics, unique_name, TopicKind};

/// The integration id in the webhook URL.
pub const INTEGRATION: &str = "bench-twilio";
/// The tenant the integration belongs to.
pub const TENANT: &str = "bench";
/// The Twilio auth token requests are signed with.
pub const AUTH_TOKEN: &str = "bench-twilio-auth-token";
/// Thread name prefix of the gateway's runtime.
pub const THREAD_NAME: &str = "gw-server";

/// A running gateway.
pub struct Gateway {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    /// `http://127.0.0.1:<port>`: where requests go, and also the public
    /// base URL the gateway rebuilds signed URLs from.
    pub base_url: String,
    /// The physical name of the call-events topic.
    pub call_events: String,
    pub state: AppState,
    runtime: tokio::runtime::Runtime,
    shutdown: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<Result<(), callstream_gateway::StartError>>>,
}

/// How the gateway is set up.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub partitions: i32,
    pub threads: usize,
    pub produce_timeout: Duration,
    /// The producer's linger; `None`: the gateway's default.
    pub linger: Option<Duration>,
}

impl Gateway {
    /// Creates fresh topics and starts the gateway on them, after switching
    /// to `framing` if given (else the process's framing stays as it is).
    /// `made` gets the topic names as soon as they exist, so they are
    /// cleaned up even if the start fails afterwards.
    pub fn start(
        settings: &KafkaSettings,
        setup: Setup,
        framing: Option<Framing>,
        made: &mut Vec<String>,
    ) -> Result<Self> {
        let topics = Topics {
            partitions: setup.partitions,
            ..Topics::with_prefix(format!("{}-", unique_name("bench-gw")))
        };
        let call_events = topics.name(CALL_EVENTS);
        let contact_commands = topics.name(CONTACT_COMMANDS);
        made.extend([call_events.clone(), contact_commands.clone()]);
        create_topics(
            settings,
            &[&call_events, &contact_commands],
            TopicKind::Events,
            setup.partitions,
        )?;

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(setup.threads.max(1))
            .thread_name(THREAD_NAME)
            .enable_all()
            .build()
            .context("starting the gateway's runtime")?;
        if let Some(framing) = framing {
            runtime.block_on(framing::adopt(framing, &topics))?;
        }
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .context("binding the gateway to 127.0.0.1:0")?;
        let addr = listener.local_addr().context("the gateway's address")?;
        let base_url = format!("http://{addr}");

        let mut config = GatewayConfig::new(
            KafkaSettings::new(&settings.bootstrap_servers, "bench-gateway"),
            topics,
        );
        config.public_base_url = base_url.clone();
        config.produce_timeout = setup.produce_timeout;
        if let Some(linger) = setup.linger {
            config.produce_linger = linger;
        }
        config.integrations = vec![IntegrationConfig {
            id: INTEGRATION.into(),
            tenant_id: TENANT.into(),
            provider: ProviderKind::Twilio,
            secrets: vec![Secret::new(AUTH_TOKEN.as_bytes().to_vec())],
            // The default (1,000/s) would make this a benchmark of the limiter.
            rate_limit: RateLimit {
                per_second: NonZeroU32::MAX,
                burst: NonZeroU32::MAX,
            },
        }];
        let state = AppState::new(&config).context("creating the gateway's state")?;
        let (tx, rx) = oneshot::channel::<()>();
        let served = runtime.spawn({
            let state = state.clone();
            async move {
                let shutdown = async {
                    let _ = rx.await;
                };
                callstream_gateway::serve(listener, state, &config, shutdown).await
            }
        });
        Ok(Self {
            addr,
            base_url,
            call_events,
            state,
            runtime,
            shutdown: Some(tx),
            served: Some(served),
        })
    }

    /// Fails if the server has stopped on its own.
    pub fn check(&self) -> Result<()> {
        if self.served.as_ref().is_some_and(|s| s.is_finished()) {
            return Err(anyhow!("the gateway stopped during the benchmark"));
        }
        Ok(())
    }

    /// Stops accepting, lets in-flight requests finish, flushes the producer.
    pub fn stop(mut self) -> Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let Some(served) = self.served.take() else {
            return Ok(());
        };
        self.runtime
            .block_on(served)
            .context("the gateway task panicked")?
            .context("the gateway failed")
    }
}
