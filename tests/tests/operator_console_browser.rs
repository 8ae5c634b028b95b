//! The operator console in a real browser (Debian's Chromium, headless, driven by
//! playwright-core from `tests/browser`), against a real stack: the broker, a fresh
//! Postgres database, the projections, the contact processor, the completion detector,
//! recovery and the CRM dispatcher, the voice and CRM simulators, and the operator API
//! served on a socket. This test seeds what upstream services would send, plays the
//! scheduler's part (a due launch once the campaign is paused, as the scheduler would at
//! the job's slot), and runs `tests/browser/console.test.mjs`, whose assertions are the
//! console's: log in, the delivery card, recover a missing completion and see it close,
//! pause a campaign and see the call held with the reason, resume and see it planned
//! again, a call a state calling rule moved shown with the rule's id on the schedule,
//! follow a causation link, replay a dead letter, a viewer without actions and
//! refused a forged one (403),
//! and no other tenant's data anywhere. Screenshots of each page go to
//! `.stack/console-screenshots/`.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use callstream_schemas::ExceptionType;
use support::operator::{eventually, seed, sims, Stack};
use uuid::Uuid;

/// How long the browser run may take, all of it.
const BROWSER_RUN: Duration = Duration::from_secs(600);
const SOON: Duration = Duration::from_secs(90);

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("browser")
}

/// `npm ci` when playwright-core is not installed yet (it is the only package, and it
/// downloads no browser: the test uses Debian's).
async fn install_playwright() -> Result<()> {
    let dir = browser_dir();
    if dir
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        return Ok(());
    }
    let status = tokio::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .status()
        .await
        .context("running npm (is Node.js installed?)")?;
    ensure!(
        status.success(),
        "npm ci in {} failed: {status}",
        dir.display()
    );
    Ok(())
}

fn chromium() -> Result<PathBuf> {
    let path = std::env::var_os("CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if !path.exists() {
        bail!(
            "{} is missing: `cargo xtask test` installs Debian's chromium, or run \
             `apt-get install chromium` as root",
            path.display()
        );
    }
    Ok(path)
}

/// Parks `value` on the dead-letter topic as the contact processor would have.
async fn park(s: &Stack, value: &[u8]) -> Result<()> {
    let source = format!(
        "{}/0/0",
        s.views
            .topics
            .name(callstream_platform::topics::CONTACT_COMMANDS)
    );
    let topic = s
        .views
        .topics
        .name(callstream_platform::topics::DEAD_LETTERS);
    let why = (
        "contact",
        "record",
        source.as_str(),
        "the contact processor refused it",
    );
    callstream_e2e::park_dead_letter(
        &callstream_e2e::producer()?,
        &topic,
        "c-letter",
        value,
        why,
        &[],
    )
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_console_works_in_a_real_browser() -> Result<()> {
    let chromium = chromium()?;
    install_playwright().await?;
    let s = Stack::start().await?;

    // Upstream inputs: the campaign's settings; a contact entered into it (its call is the
    // one the pause will hold); a call that a voicemail took but whose completion never
    // came (the detector's one-second window makes it missing at once); an exception.
    s.produce(seed::every_day()).await?;
    s.produce(seed::launch_request("c-held", false)).await?;
    // A Kentucky lead whose call comes due before 10:00 its time: moved by Kentucky's hours.
    s.produce(seed::kentucky_morning_request("c-kentucky"))
        .await?;
    s.sim.set_behaviour(sims::quick_voicemail())?;
    let sid = s.place_call().await?;
    let missing_launch = Uuid::new_v4();
    s.produce(seed::accepted("c-missing", missing_launch, &sid))
        .await?;
    s.produce(seed::opened(
        "c-exception",
        ExceptionType::NoSlot,
        "scheduler",
    ))
    .await?;
    // A record the contact processor could not handle, parked as the runtime parks it.
    let letter = callstream_schemas::AnyEvent::from(seed::launch_request("c-letter", false));
    park(&s, &letter.encode()?).await?;
    // Another tenant's contact, which no page may show.
    let mut other = seed::launch_request("other-tenant-secret", false);
    other.tenant_id = "tenant-other".into();
    s.produce(other).await?;

    let pool = &s.views.db.pool;
    let held_job: Uuid = eventually("c-held's job planned", SOON, || async {
        Ok(sqlx::query_scalar(
            "SELECT job_id FROM jobs WHERE tenant_id = $1 AND contact_id = 'c-held'",
        )
        .bind(seed::TENANT)
        .fetch_optional(pool)
        .await?)
    })
    .await?;
    let kentucky_job: Uuid = eventually("c-kentucky's job planned", SOON, || async {
        Ok(sqlx::query_scalar(
            "SELECT job_id FROM jobs WHERE tenant_id = $1 AND contact_id = 'c-kentucky'",
        )
        .bind(seed::TENANT)
        .fetch_optional(pool)
        .await?)
    })
    .await?;
    s.produce(seed::launch_due("c-kentucky", kentucky_job))
        .await?;
    eventually("c-kentucky's call moved by a rule", SOON, || async {
        Ok(sqlx::query_scalar::<_, Uuid>(
            "SELECT job_id FROM jobs WHERE tenant_id = $1 AND contact_id = 'c-kentucky'
             AND reason = 'state_hours:KY' AND state = 'requested'",
        )
        .bind(seed::TENANT)
        .fetch_optional(pool)
        .await?)
    })
    .await?;
    eventually("the launch missing", SOON, || async {
        Ok(sqlx::query_scalar::<_, Uuid>(
            "SELECT launch_id FROM launches WHERE tenant_id = $1 AND launch_id = $2
             AND missing_at IS NOT NULL",
        )
        .bind(seed::TENANT)
        .bind(missing_launch)
        .fetch_optional(pool)
        .await?)
    })
    .await?;
    eventually("the dead letter", SOON, || async {
        Ok(
            sqlx::query_scalar::<_, Uuid>(
                "SELECT letter_id FROM dead_letters WHERE tenant_id = $1",
            )
            .bind(seed::TENANT)
            .fetch_optional(pool)
            .await?,
        )
    })
    .await?;
    eventually("the other tenant's job", SOON, || async {
        Ok(sqlx::query_scalar::<_, Uuid>(
            "SELECT job_id FROM jobs WHERE tenant_id = 'tenant-other'",
        )
        .fetch_optional(pool)
        .await?)
    })
    .await?;

    // The voicemail took the call at the platform: recovery will find it there.
    eventually("the call completed at the platform", SOON, || async {
        Ok((s.call_status(&sid).await? == "completed").then_some(()))
    })
    .await?;

    // The API on a socket, as the browser needs it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let router = s.router.clone();
    let server = tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
    });

    // The scheduler's part: once the browser has paused the campaign, the held contact's
    // job comes due (as it would at its slot), and the contact processor holds it.
    let scheduler = {
        let pool = pool.clone();
        let s = &s;
        async move {
            eventually(
                "the campaign paused from the console",
                BROWSER_RUN,
                || async {
                    Ok(sqlx::query_scalar::<_, bool>(
                        "SELECT true FROM control_settings WHERE tenant_id = $1
                     AND setting = 'campaign_pause' AND campaign_id = $2 AND enabled",
                    )
                    .bind(seed::TENANT)
                    .bind(seed::CAMPAIGN)
                    .fetch_optional(&pool)
                    .await?)
                },
            )
            .await?;
            s.produce(seed::launch_due("c-held", held_job)).await
        }
    };

    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.stack/console-screenshots");
    std::fs::create_dir_all(&shots)?;
    let shots = shots.canonicalize()?;
    let browser = tokio::process::Command::new("node")
        .args(["--test", "--test-concurrency=1", "console.test.mjs"])
        .current_dir(browser_dir())
        .env("CONSOLE_URL", &url)
        .env("ADMIN_TOKEN", &s.admin)
        .env("VIEWER_TOKEN", &s.viewer)
        .env("CAMPAIGN", seed::CAMPAIGN)
        .env("HELD_CONTACT", "c-held")
        .env("RULE_CONTACT", "c-kentucky")
        .env("MISSING_LAUNCH", missing_launch.to_string())
        .env("OTHER_TENANT_CONTACT", "other-tenant-secret")
        .env("SCREENSHOT_DIR", &shots)
        .env("CHROMIUM", &chromium)
        .kill_on_drop(true)
        .output();
    // The browser's run decides; the scheduler's part runs beside it until it is done.
    let (output, scheduled) = {
        let browser = tokio::time::timeout(BROWSER_RUN, browser);
        tokio::pin!(browser, scheduler);
        let mut scheduled = None;
        let output = loop {
            tokio::select! {
                out = &mut browser => break out,
                done = &mut scheduler, if scheduled.is_none() => scheduled = Some(done),
            }
        };
        (output, scheduled)
    };
    let output = output
        .context("the browser run took longer than 10 minutes")?
        .context("running node")?;
    println!("{}", String::from_utf8_lossy(&output.stdout));
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    ensure!(
        output.status.success(),
        "the browser tests failed ({}); screenshots in {}",
        output.status,
        shots.display()
    );
    scheduled.context("the campaign was never paused")??;
    println!("screenshots: {}", shots.display());
    server.abort();
    s.stop()
}
