//! The notifier on the real broker, sending to real servers: an HTTP server taking chat
//! posts and signed webhooks, and aiosmtpd taking email.
//!
//! - An alert and an exception each arrive once, on the channels routed; a route to a
//!   channel of another tenant sends nothing; a digest groups one kind's notifications.
//! - An SMTP outage delays an email, then it is delivered.
//! - SIGKILL of the `callstream process notifier` process at random moments over 500
//!   notifications loses none; a message sent again after a kill carries its id, so the
//!   receiver (like any Standard Webhooks receiver) takes it once.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use callstream_e2e::fixtures;
use callstream_e2e::runtime::Running;
use callstream_notifier::{Channels, NotifierConfig, NotifierMetrics};
use callstream_platform::{KafkaSettings, Topics};
use callstream_schemas::{
    Actor, Alert, AlertKind, AlertStatus, ControlSetting, ControlValue, Event, ExceptionStatus,
    ExceptionType, NotificationRoute, NotificationRoutes,
};
use rand::{Rng, SeedableRng};
use rdkafka::producer::FutureProducer;
use support::sinks::{HttpSink, SmtpSink, WEBHOOK_SECRET};
use uuid::Uuid;

const WAIT: Duration = Duration::from_secs(60);

/// Topics of one test, and a producer.
struct World {
    topics: Topics,
    producer: FutureProducer,
}

impl World {
    async fn new(name: &str) -> Result<Self> {
        let mut topics = Topics::with_prefix(format!("{}-", callstream_e2e::unique_name(name)));
        topics.partitions = 2;
        let kafka = KafkaSettings::from_env(format!("{name}-test"));
        callstream_platform::admin::ensure_topics(&kafka, &topics.specs()).await?;
        Ok(Self {
            topics,
            producer: callstream_e2e::producer()?,
        })
    }

    async fn send<E: Event>(&self, logical: &str, key: &str, event: &E) -> Result<()> {
        let topic = self.topics.name(logical);
        callstream_e2e::produce(&self.producer, &topic, key, &event.encode()?).await?;
        Ok(())
    }

    /// Sets `tenant`'s routes: `(kinds, channel, urgent)`.
    async fn routes(
        &self,
        tenant: &str,
        routes: &[(&[&str], &str, bool)],
        digest_seconds: i32,
    ) -> Result<()> {
        let value = ControlValue {
            notifications: Some(NotificationRoutes {
                routes: routes
                    .iter()
                    .map(|(kinds, channel, urgent)| NotificationRoute {
                        kinds: kinds.iter().map(|k| k.to_string()).collect(),
                        channel: channel.to_string(),
                        urgent: *urgent,
                    })
                    .collect(),
                quiet_hours: None,
                digest_seconds,
            }),
            ..ControlValue::default()
        };
        let change = fixtures::control_change(
            tenant,
            ControlSetting::NotificationRoutes,
            None,
            value,
            Actor::operator("admin@e2e"),
            chrono::Utc::now(),
        );
        self.send(
            callstream_platform::topics::CONTROL,
            &change.record_key(),
            &change,
        )
        .await
    }

    async fn exception(&self, tenant: &str, contact: &str, t: ExceptionType) -> Result<Uuid> {
        let id = Uuid::new_v4();
        let e = fixtures::exception(
            tenant,
            contact,
            id,
            ExceptionStatus::Open,
            t,
            Actor::system("crm-dispatcher"),
            chrono::Utc::now(),
        );
        self.send(callstream_platform::topics::EXCEPTIONS, contact, &e)
            .await?;
        Ok(id)
    }
}

fn alert(tenant: &str) -> Alert {
    let now = chrono::Utc::now();
    let id = Uuid::new_v4();
    Alert {
        event_id: Uuid::new_v4(),
        tenant_id: tenant.into(),
        occurred_at: now,
        causation_id: None,
        correlation_id: Some(id),
        alert_id: id,
        kind: AlertKind::DeliveryRateLow,
        status: AlertStatus::Raised,
        bucket_start: now,
        bucket_ms: 600_000,
        launches: 40,
        completions: 22,
        rate: 0.55,
        threshold: 0.8,
        detail: Some("22 of 40 launches had their completion delivered by the platform".into()),
        subject: None,
    }
}

fn channels_file(dir: &Path, http: &str, smtp_port: u16) -> Result<String> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("hook-secret"), WEBHOOK_SECRET)?;
    Ok(format!(
        r#"
[smtp]
host = "127.0.0.1"
port = {smtp_port}
tls = "none"
from = "callstream <alerts@callstream.test>"

[channels.acme-chat]
kind = "chat"
url = "{http}/acme-chat"
tenants = ["acme"]

[channels.acme-email]
kind = "email"
to = ["ops@acme.test"]
tenants = ["acme"]
per_minute = 6000

[channels.ops-hook]
kind = "webhook"
url = "{http}/ops-hook"
secret_file = "hook-secret"
tenants = ["*"]
per_minute = 600000
"#
    ))
}

fn config(topics: &Topics, channels: Channels) -> NotifierConfig {
    let mut config = NotifierConfig::new(topics.clone(), channels);
    config.console_url = Some("http://console.test/console".into());
    config.backoff.base_delay = Duration::from_millis(200);
    config.backoff.max_delay = Duration::from_secs(1);
    config.max_attempts = 100;
    config.request_timeout = Duration::from_secs(3);
    config.result_timeout = Duration::from_secs(6);
    config
}

fn start(config: NotifierConfig) -> Result<Running> {
    let effects = callstream_notifier::effect_runner(&config)?;
    let spec = callstream_notifier::spec(
        &config.topics,
        &config.topics.name(callstream_notifier::APP_ID),
    );
    Ok(Running::start(
        callstream_notifier::processor(config, NotifierMetrics::new()),
        spec,
        |c| {
            c.commit.interval = Duration::from_millis(50);
            c.effects = Some(effects);
        },
    ))
}

/// Polls `check` until it gives a value or `WAIT` passes.
async fn eventually<T>(what: &str, mut check: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = check()? {
            return Ok(value);
        }
        if started.elapsed() > WAIT {
            bail!("{what}: not within {WAIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn alerts_and_exceptions_arrive_once_where_routed_and_a_digest_groups_the_rest() -> Result<()>
{
    let world = World::new("notify").await?;
    let http = HttpSink::start().await?;
    let smtp = SmtpSink::start().await?;
    let dir = std::env::temp_dir().join(callstream_e2e::unique_name("notifier"));
    let channels = Channels::parse(&channels_file(&dir, &http.url, smtp.port)?, &dir)?;
    // acme: alerts to its chat, exceptions to its email in 3-second digests; the
    // deployment: every tenant's alerts to the ops webhook; globex names acme's channels,
    // which do not admit it.
    world
        .routes(
            "acme",
            &[
                (&["alert.*"], "acme-chat", false),
                (&["exception.*"], "acme-email", false),
            ],
            3,
        )
        .await?;
    world
        .routes("*", &[(&["alert.*"], "ops-hook", false)], 0)
        .await?;
    world
        .routes(
            "globex",
            &[(&["*"], "acme-email", false), (&["*"], "acme-chat", false)],
            0,
        )
        .await?;
    let notifier = start(config(&world.topics, channels))?;

    let raised = alert("acme");
    world
        .send(callstream_platform::topics::ALERTS, "acme", &raised)
        .await?;
    world
        .exception("acme", "c-1", ExceptionType::CrmFailed)
        .await?;
    world
        .exception("globex", "g-1", ExceptionType::CrmFailed)
        .await?;
    for i in 0..6 {
        world
            .exception("acme", &format!("c-{}", 10 + i), ExceptionType::NoSlot)
            .await?;
    }

    // The alert: once on acme's chat, once (signed) on the deployment's webhook.
    eventually("the alert on both channels", || {
        Ok(
            (http.posts_to("acme-chat").len() == 1 && http.posts_to("ops-hook").len() == 1)
                .then_some(()),
        )
    })
    .await?;
    let hook = &http.posts_to("ops-hook")[0];
    ensure!(hook.signed, "the webhook's signature checks: {hook:?}");
    ensure!(
        hook.body["data"]["kind"] == "alert.delivery_rate_low",
        "{:?}",
        hook.body
    );
    ensure!(
        hook.body["data"]["link"] == "http://console.test/console/today",
        "{:?}",
        hook.body
    );
    let chat = &http.posts_to("acme-chat")[0];
    ensure!(
        chat.body["text"]
            .as_str()
            .is_some_and(|t| t.contains("55%")),
        "{:?}",
        chat.body
    );

    // The exceptions: the CRM failure and the first no-slot at once, the other five
    // no-slots as one digest when the 3-second window ends.
    let mails = eventually("three emails", || {
        let mails = smtp.mails()?;
        Ok((mails.len() >= 3).then_some(mails))
    })
    .await?;
    // Nothing more comes: no repeat, nothing of globex.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mails = {
        let now = smtp.mails()?;
        ensure!(now.len() == mails.len(), "more emails came: {now:?}");
        now
    };
    ensure!(mails.len() == 3, "{mails:#?}");
    let digest = mails
        .iter()
        .find(|m| m.body.contains("5 notifications of exception.no_slot"))
        .with_context(|| format!("no digest among {mails:#?}"))?;
    ensure!(digest.subject.contains("5 notifications"), "{digest:?}");
    ensure!(
        mails
            .iter()
            .filter(|m| m
                .body
                .contains("crm_failed exception opened for contact c-1"))
            .count()
            == 1,
        "{mails:#?}"
    );
    let ids: BTreeSet<_> = mails.iter().map(|m| m.message_id.clone()).collect();
    ensure!(
        ids.len() == 3 && ids.iter().all(|i| i.ends_with("@callstream>")),
        "{ids:?}"
    );
    ensure!(http.posts().len() == 2, "{:?}", http.posts());
    let everything = format!("{:?}{:?}", http.posts(), mails);
    ensure!(
        !everything.contains("globex") && !everything.contains("g-1"),
        "another tenant's data arrived"
    );
    notifier.stop()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_smtp_outage_delays_an_email_and_then_it_is_delivered() -> Result<()> {
    let world = World::new("notify-outage").await?;
    let http = HttpSink::start().await?;
    let mut smtp = SmtpSink::start().await?;
    let dir = std::env::temp_dir().join(callstream_e2e::unique_name("notifier"));
    let channels = Channels::parse(&channels_file(&dir, &http.url, smtp.port)?, &dir)?;
    world
        .routes("acme", &[(&["exception.*"], "acme-email", false)], 0)
        .await?;
    smtp.stop();
    let notifier = start(config(&world.topics, channels))?;
    world
        .exception("acme", "c-1", ExceptionType::RecoveryFailed)
        .await?;
    // The relay is down for a while: sends fail and are retried.
    tokio::time::sleep(Duration::from_secs(4)).await;
    ensure!(smtp.mails()?.is_empty());
    smtp.resume().await?;
    let mails = eventually("the email after the outage", || {
        let mails = smtp.mails()?;
        Ok((!mails.is_empty()).then_some(mails))
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(smtp.mails()?.len() == 1, "{mails:?}");
    ensure!(mails[0].body.contains("recovery_failed"), "{mails:?}");
    notifier.stop()?;
    Ok(())
}

/// `callstream process notifier` as production runs it.
fn notifier_process(topics: &Topics, channels: &Path) -> Result<Child> {
    Command::new(callstream_e2e::callstream_bin()?)
        .args(["process", "notifier"])
        .env("CALLSTREAM_TOPIC_PREFIX", &topics.prefix)
        .env("CALLSTREAM_TOPIC_PARTITIONS", topics.partitions.to_string())
        .env("CALLSTREAM_NOTIFIER_CHANNELS", channels)
        .env("CALLSTREAM_NOTIFIER_RETRY_BASE_MS", "200")
        .env("CALLSTREAM_NOTIFIER_RETRY_MAX_MS", "1000")
        .env("CALLSTREAM_NOTIFIER_REQUEST_TIMEOUT_MS", "3000")
        .env("CALLSTREAM_NOTIFIER_RESULT_TIMEOUT_MS", "6000")
        .env("CALLSTREAM_METRICS_ADDR", "127.0.0.1:0")
        .env("CALLSTREAM_COMMIT_INTERVAL_MS", "50")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting callstream process notifier")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_at_random_moments_loses_no_notification_and_repeats_only_under_the_same_id(
) -> Result<()> {
    const NOTIFICATIONS: usize = 500;
    const KILLS: usize = 4;
    let seed: u64 = std::env::var("NOTIFIER_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("seed {seed} (NOTIFIER_KILL_SEED={seed} repeats this run's kill times)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);

    let world = World::new("notify-kill").await?;
    let http = HttpSink::start().await?;
    let dir = std::env::temp_dir().join(callstream_e2e::unique_name("notifier"));
    let file = dir.join("channels.toml");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(&file, channels_file(&dir, &http.url, 9)?)?;
    world
        .routes("acme", &[(&["exception.*"], "ops-hook", false)], 0)
        .await?;
    for i in 0..NOTIFICATIONS {
        world
            .exception("acme", &format!("c-{i}"), ExceptionType::NoSlot)
            .await?;
    }

    let mut child = notifier_process(&world.topics, &file)?;
    let started = Instant::now();
    for kill in 0..KILLS {
        // A kill at a random moment of the run, once sending has begun.
        eventually("sending under way", || {
            Ok((http.posts().len() > kill * 40).then_some(()))
        })
        .await?;
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..400))).await;
        child.kill()?;
        child.wait()?;
        println!(
            "kill {} after {:?}: {} posts so far",
            kill + 1,
            started.elapsed(),
            http.posts().len()
        );
        child = notifier_process(&world.topics, &file)?;
    }
    let delivered = eventually("every notification delivered", || {
        let ids: BTreeMap<String, usize> =
            http.posts_to("ops-hook")
                .iter()
                .fold(BTreeMap::new(), |mut m, p| {
                    *m.entry(p.id.clone().unwrap_or_default()).or_default() += 1;
                    m
                });
        Ok((ids.len() >= NOTIFICATIONS).then_some(ids))
    })
    .await;
    child.kill()?;
    child.wait()?;
    let delivered = delivered?;
    let posts = http.posts_to("ops-hook");
    ensure!(posts.iter().all(|p| p.signed), "every webhook signed");
    // The ids are the notifications' (one exception each): none lost.
    let subjects: BTreeSet<String> = posts
        .iter()
        .filter_map(|p| p.body["data"]["notifications"].as_array().cloned())
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    ensure!(
        subjects.len() == NOTIFICATIONS,
        "{} distinct notifications, expected {NOTIFICATIONS}",
        subjects.len()
    );
    ensure!(
        delivered.len() == NOTIFICATIONS,
        "{} distinct message ids",
        delivered.len()
    );
    // A message can go again only when a kill fell between its send and its record, which
    // is at most the one message in flight on the channel at each kill; it carries the
    // same webhook-id, so the receiver takes it once.
    let repeats: usize = delivered.values().map(|n| n - 1).sum();
    println!(
        "{NOTIFICATIONS} notifications, {KILLS} kills: {} posts, {} distinct, {repeats} sent again under the same id",
        posts.len(),
        delivered.len()
    );
    ensure!(repeats <= KILLS, "{repeats} repeats for {KILLS} kills");
    Ok(())
}

/// Commits `offset` on every partition of `topic` for `group`, as a consumer that got that
/// far would.
fn commit_group_at(group: &str, topic: &str, partitions: i32, offset: i64) -> Result<()> {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    let consumer: BaseConsumer = callstream_e2e::client_config()
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()?;
    let mut list = rdkafka::TopicPartitionList::new();
    for p in 0..partitions {
        list.add_partition_offset(topic, p, rdkafka::Offset::Offset(offset))?;
    }
    consumer.commit(&list, CommitMode::Sync)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_notifier_raises_its_own_alerts_and_resolves_them() -> Result<()> {
    let world = World::new("notify-watch").await?;
    let http = HttpSink::start().await?;
    let dir = std::env::temp_dir().join(callstream_e2e::unique_name("notifier"));
    let channels = Channels::parse(&channels_file(&dir, &http.url, 9)?, &dir)?;
    world
        .routes("acme", &[(&["alert.*"], "acme-chat", false)], 0)
        .await?;
    world
        .routes("*", &[(&["alert.consumer_lag"], "ops-hook", false)], 0)
        .await?;
    let mut config = config(&world.topics, channels);
    config.thresholds = callstream_notifier::watch::Thresholds {
        missing_backlog: 2,
        dead_letters: 1,
        error_rate: 2,
        window_ms: 3_000,
        lag: 5,
        lag_for_ms: 1_000,
    };
    let notifier = start(config)?;
    let shutdown = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // A group 10 records behind on a topic nobody else here reads.
    let stuck = world.topics.name("stuck-group");
    let lagging_topic = world
        .topics
        .name(callstream_platform::topics::SCHEDULE_EVENTS);
    for i in 0..10 {
        callstream_e2e::produce(&world.producer, &lagging_topic, &format!("k{i}"), b"x").await?;
    }
    commit_group_at(&stuck, &lagging_topic, world.topics.partitions, 0)?;
    let sampler = callstream_notifier::lag::spawn(
        KafkaSettings::from_env("notify-watch-lag"),
        &world.topics,
        vec!["stuck-group".into()],
        Duration::from_millis(300),
        shutdown.clone(),
    )?;

    let said = |path: &str, words: &str| {
        http.posts_to(path)
            .iter()
            .filter(|p| p.body.to_string().contains(words))
            .count()
    };
    // Two completions missing: the backlog alert; one resolved: it resolves.
    let first = world
        .exception("acme", "c-1", ExceptionType::CompletionMissing)
        .await?;
    world
        .exception("acme", "c-2", ExceptionType::CompletionMissing)
        .await?;
    eventually("the backlog raised", || {
        Ok((said("acme-chat", "missing backlog raised") == 1).then_some(()))
    })
    .await?;
    let resolved = fixtures::exception(
        "acme",
        "c-1",
        first,
        ExceptionStatus::Resolved,
        ExceptionType::CompletionMissing,
        Actor::system("completion-detector"),
        chrono::Utc::now(),
    );
    world
        .send(callstream_platform::topics::EXCEPTIONS, "c-1", &resolved)
        .await?;
    eventually("the backlog resolved", || {
        Ok((said("acme-chat", "missing backlog resolved") == 1).then_some(()))
    })
    .await?;

    // A dead letter: raised at once, resolved when 3 s pass without another.
    let letter = fixtures::exception(
        "acme",
        "c-9",
        Uuid::new_v4(),
        ExceptionStatus::Open,
        ExceptionType::NoSlot,
        Actor::system("scheduler"),
        chrono::Utc::now(),
    );
    callstream_e2e::park_dead_letter(
        &world.producer,
        &world.topics.name(callstream_platform::topics::DEAD_LETTERS),
        "c-9",
        &letter.encode()?,
        (
            "scheduler",
            "record",
            "schedule-requests/0/7",
            "a test's refusal",
        ),
        &[],
    )
    .await?;
    eventually("dead letters raised", || {
        Ok((said("acme-chat", "dead letters raised") == 1).then_some(()))
    })
    .await?;
    eventually("dead letters resolved", || {
        Ok((said("acme-chat", "dead letters resolved") == 1).then_some(()))
    })
    .await?;

    // The stuck group: raised after lagging for a second, on the deployment's webhook;
    // resolved once it catches up.
    eventually("lag raised", || {
        Ok((said("ops-hook", "consumer lag raised") == 1).then_some(()))
    })
    .await?;
    let hook = http.posts_to("ops-hook");
    ensure!(
        hook[0].body.to_string().contains(&stuck),
        "the lag names the group: {:?}",
        hook[0].body
    );
    commit_group_at(&stuck, &lagging_topic, world.topics.partitions, 1_000_000)?;
    eventually("lag resolved", || {
        Ok((said("ops-hook", "consumer lag resolved") == 1).then_some(()))
    })
    .await?;

    shutdown.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = sampler.join();
    notifier.stop()?;
    Ok(())
}
