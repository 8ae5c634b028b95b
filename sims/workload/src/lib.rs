//! The demo's workload: what a CRM sends when admissions campaigns start.
//! Contacts spread over campaigns and time zones (US area codes, and leads
//! abroad with their own zone, so some are inside a calling window at any
//! hour), a few flagged do-not-call, blocked, enrolled or spam, sent to the
//! gateway's launch intake in bursts of hundreds in the same second: the
//! load that broke the system this one replaces.
//!
//! Deterministic for a seed. Retries 429 and 503 as a real sender would,
//! honouring `Retry-After`; every request keeps its `request_id`, so a retry
//! is the same command.

mod arrivals;
mod plan;
mod send;

pub use arrivals::{schedule, Arrivals};
pub use plan::{plan, Launch, Plan, PlanSettings};
pub use send::{send, SendReport, SendSettings};

use clap::Args;

/// `callstream sim workload`.
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// The gateway's base URL.
    #[arg(
        long,
        env = "CALLSTREAM_GATEWAY_URL",
        default_value = "http://127.0.0.1:7300"
    )]
    pub gateway: String,
    /// The tenant's launch-intake bearer token.
    #[arg(long, env = "CALLSTREAM_WORKLOAD_TOKEN")]
    pub token: String,
    /// How many contacts.
    #[arg(long, default_value_t = 3_000)]
    pub contacts: usize,
    /// Campaigns the contacts enter (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "spring-intake,fall-intake,reengage"
    )]
    pub campaigns: Vec<String>,
    /// Launch requests sent in the same second, per burst.
    #[arg(long, default_value_t = 500)]
    pub burst: usize,
    /// Pause between bursts, in milliseconds.
    #[arg(long, default_value_t = 1_000)]
    pub pause_ms: u64,
    /// Prefix of contact and request ids (one per demo run keeps runs apart).
    #[arg(long, default_value = "demo")]
    pub id_prefix: String,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// Plans and sends the workload; prints the report as one JSON line.
pub async fn run(args: &WorkloadArgs) -> anyhow::Result<SendReport> {
    let plan = plan(&PlanSettings {
        contacts: args.contacts,
        campaigns: args.campaigns.clone(),
        tenants: Vec::new(),
        id_prefix: args.id_prefix.clone(),
        seed: args.seed,
    });
    let report = send(
        &plan,
        &SendSettings {
            gateway: args.gateway.clone(),
            token: args.token.clone(),
            tenant_tokens: Default::default(),
            burst: args.burst,
            pause: std::time::Duration::from_millis(args.pause_ms),
        },
    )
    .await?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(report)
}
