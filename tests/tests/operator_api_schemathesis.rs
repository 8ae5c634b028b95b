//! The OpenAPI document checked by schemathesis (PyPI), property-based: the operator API
//! served on a loopback socket, in front of the live views of a seeded world (contacts with
//! jobs, open exceptions, missing completions, a command), with the processors running, so
//! generated requests reach real data as well as random ids. Every check schemathesis has
//! (`--checks all`) must pass: no server error, every answer as documented (status, body,
//! headers), schema-valid requests accepted, invalid ones refused, no auth bypass.
//!
//! Needs the schemathesis CLI: `cargo xtask schemathesis` installs it into a venv under
//! `.stack/` and runs this test with `SCHEMATHESIS` pointing at it; further arguments for
//! `schemathesis run` come from `SCHEMATHESIS_ARGS`.

mod support;

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use callstream_schemas::ExceptionType;
use serde_json::{json, Value};
use support::operator::{eventually, seed, Stack};
use tokio::net::TcpListener;

const SOON: Duration = Duration::from_secs(15);

/// The values of `field` in the items of a page (or of a plain list).
fn ids(page: &Value, field: &str) -> Vec<String> {
    let items = page.get("items").unwrap_or(page);
    let mut ids: Vec<String> = items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item[field].as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Contacts entered, launches whose completion goes missing (their calls ring on), and
/// exceptions of services that keep no case: every view has rows of the token's tenant.
async fn seed_world(s: &Stack) -> Result<()> {
    s.produce(seed::every_day()).await?;
    for i in 0..5 {
        s.produce(seed::launch_request(&format!("st-c{i}"), i == 4))
            .await?;
    }
    for i in 0..3 {
        let sid = s.place_call().await?;
        let launch = uuid::Uuid::new_v4();
        s.produce(seed::accepted(&format!("st-l{i}"), launch, &sid))
            .await?;
    }
    s.produce(seed::opened(
        "st-c0",
        ExceptionType::CrmFailed,
        "crm-dispatcher",
    ))
    .await?;
    s.produce(seed::opened("st-c1", ExceptionType::NoSlot, "scheduler"))
        .await?;
    eventually("the seeded views", SOON, || async {
        let jobs = ids(&s.get("/v1/jobs").await?, "job_id").len();
        let missing = ids(&s.get("/v1/launches/missing").await?, "launch_id").len();
        let open = ids(&s.get("/v1/exceptions").await?, "exception_id").len();
        Ok((jobs >= 4 && missing == 3 && open >= 5).then_some(()))
    })
    .await
}

/// A schemathesis configuration that draws path and query parameters from the seeded ids
/// half of the time (random ones the other half), and the tenant header from the token's
/// tenant most of the time.
async fn config_file(s: &Stack, command_id: &str) -> Result<std::path::PathBuf> {
    let jobs = s.get("/v1/jobs").await?;
    let exceptions = s.get("/v1/exceptions?status=all").await?;
    let missing = s.get("/v1/launches/missing").await?;
    let dictionaries = [
        ("job_ids", ids(&jobs, "job_id")),
        ("contact_ids", ids(&jobs, "contact_id")),
        ("exception_ids", ids(&exceptions, "exception_id")),
        ("launch_ids", ids(&missing, "launch_id")),
        ("command_ids", vec![command_id.to_string()]),
        ("campaign_ids", vec![seed::CAMPAIGN.to_string()]),
        ("tenants", vec![seed::TENANT.to_string()]),
    ];
    let mut toml = String::new();
    for (name, values) in &dictionaries {
        ensure!(!values.is_empty(), "no {name} seeded");
        toml.push_str(&format!(
            "[dictionaries.{name}]\nvalues = {}\n\n",
            json!(values)
        ));
    }
    toml.push_str("[parameters]\n");
    for (parameter, dictionary, probability) in [
        ("path.job_id", "job_ids", 0.5),
        ("path.contact_id", "contact_ids", 0.5),
        ("query.contact_id", "contact_ids", 0.5),
        ("path.exception_id", "exception_ids", 0.5),
        ("path.launch_id", "launch_ids", 0.5),
        ("path.command_id", "command_ids", 0.5),
        ("path.campaign_id", "campaign_ids", 0.5),
        ("query.campaign_id", "campaign_ids", 0.5),
        ("header.X-Tenant-Id", "tenants", 0.8),
    ] {
        toml.push_str(&format!(
            "\"{parameter}\" = {{ dictionary = \"{dictionary}\", probability = {probability} }}\n"
        ));
    }
    // A range longer than its route's bound is 400 (31 days of delivery, 7 of slots): a
    // rule between two parameters, which OpenAPI cannot state, so a generated range past
    // it is a schema-valid request the API refuses on purpose. Only those two routes
    // accept 400 as an answer to valid data; everything else keeps the default.
    for route in ["/v1/delivery", "/v1/slots"] {
        toml.push_str(&format!(
            "\n[[operations]]\ninclude-path = \"{route}\"\n\
             checks.positive_data_acceptance.expected-statuses = \
             [\"2xx\", \"400\", \"401\", \"403\", \"404\", \"409\", \"5xx\"]\n"
        ));
    }
    let path = std::env::temp_dir().join(format!(
        "{}.toml",
        callstream_e2e::unique_name("schemathesis")
    ));
    std::fs::write(&path, toml)?;
    Ok(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the schemathesis CLI: run `cargo xtask schemathesis`"]
async fn schemathesis_finds_nothing_against_the_openapi_document() -> Result<()> {
    let started = Instant::now();
    let bin = std::env::var("SCHEMATHESIS").context(
        "SCHEMATHESIS must name the schemathesis CLI (cargo xtask schemathesis sets it)",
    )?;
    let s = Stack::start().await?;
    seed_world(&s).await?;
    let (status, sent) = s
        .call(
            "POST",
            "/v1/contacts/st-c3/cancel-future-jobs",
            &s.operator,
            Some(json!({"reason": "seed"})),
        )
        .await?;
    ensure!(status == 202, "{status} {sent}");
    let command_id = sent["command_id"]
        .as_str()
        .context("command id")?
        .to_string();
    let config = config_file(&s, &command_id).await?;

    // The real server (timeouts and all), with short waits: a `?wait=` on an unknown
    // command waits its whole length, and schemathesis asks that often.
    let mut api = s.config.clone();
    api.max_wait = Duration::from_secs(1);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(callstream_operator_api::serve(
        listener,
        callstream_operator_api::state(&api)?,
        async {
            let _ = stopped.await;
        },
    ));
    println!(
        "seeded in {:?}; schemathesis against {base}",
        started.elapsed()
    );

    let extra = std::env::var("SCHEMATHESIS_ARGS").unwrap_or_default();
    let status = tokio::process::Command::new(&bin)
        .arg("--config-file")
        .arg(&config)
        .args(["run", &format!("{base}/openapi.json")])
        .args(["--checks", "all", "--max-examples", "25", "--seed", "1"])
        .args(["-H", &format!("Authorization: Bearer {}", s.admin)])
        .args(extra.split_whitespace())
        .status()
        .await
        .with_context(|| format!("running {bin}"))?;
    let _ = stop.send(());
    server.await??;
    let _ = std::fs::remove_file(&config);
    s.stop()?;
    println!("whole run {:?}", started.elapsed());
    if !status.success() {
        bail!("schemathesis found problems ({status}); its report is above");
    }
    Ok(())
}
