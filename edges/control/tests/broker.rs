//! `control apply` against the real broker: the file's settings land on the
//! control topic with who, when, old and new value; applying it again
//! publishes nothing; a changed file publishes only the differences; and a
//! processor on the runtime reads through the view what apply wrote.

use std::time::Duration;

use anyhow::Result;
use callstream_control::{apply_file, kafka::read_table, ControlFile};
use callstream_e2e::runtime::{next_value, reader, Running};
use callstream_e2e::{bootstrap_servers, create_topic, produce, producer, unique_name};
use callstream_kit::control::{ControlTable, Pause};
use callstream_platform::{admin, topics, KafkaSettings, TopicKind, Topics};
use callstream_runtime::{Context, Output, ProcessError, Processor, ProcessorSpec, Record};
use callstream_schemas::{Actor, ControlSetting};

const EXAMPLE: &str = include_str!("../example-control.toml");

async fn control_topic() -> Result<(KafkaSettings, String)> {
    let topics = Topics {
        partitions: 3,
        ..Topics::with_prefix(format!("{}-", unique_name("ctl")))
    };
    let kafka = KafkaSettings::new(bootstrap_servers(), "control-test");
    // The control topic and its history, which every apply also writes.
    let specs = [
        topics.spec(topics::CONTROL, TopicKind::Table),
        topics.spec(topics::CONTROL_HISTORY, TopicKind::Events),
    ];
    admin::ensure_topics(&kafka, &specs).await?;
    Ok((kafka, topics.name(topics::CONTROL)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_publishes_differences_once_with_who_and_old_values() -> Result<()> {
    let (kafka, topic) = control_topic().await?;
    let file = ControlFile::parse(EXAMPLE)?;
    let alice = Actor::operator("alice");

    let first = apply_file(
        &kafka,
        &topic,
        &file,
        alice.clone(),
        Some("set-up".into()),
        false,
    )
    .await?;
    assert!(first.published);
    assert_eq!(first.changes.len(), file.desired().len());
    assert!(first.changes.iter().all(|c| c.old_value.is_none()
        && c.actor == alice
        && c.reason.as_deref() == Some("set-up")));

    // The same file again: nothing to publish.
    let second = apply_file(&kafka, &topic, &file, alice.clone(), None, false).await?;
    assert!(second.changes.is_empty(), "{:?}", second.changes);
    assert!(!second.published);

    // Pause a campaign and drop another: exactly those settings change.
    let edited = EXAMPLE
        .replace(
            "[tenants.acme.campaigns.enrolment]\npaused = false",
            "[tenants.acme.campaigns.enrolment]\npaused = true",
        )
        .split("[tenants.globex.campaigns.renewals]")
        .next()
        .unwrap_or_default()
        .to_owned();
    let edited = ControlFile::parse(&edited)?;
    let bob = Actor::operator("bob");
    let dry = apply_file(&kafka, &topic, &edited, bob.clone(), None, true).await?;
    assert!(!dry.published);
    let third = apply_file(&kafka, &topic, &edited, bob.clone(), None, false).await?;
    let keys: Vec<String> = third.changes.iter().map(|c| c.record_key()).collect();
    assert_eq!(
        keys,
        [
            "acme/campaign_pause/enrolment",
            "globex/campaign_pause/renewals",
            "globex/campaign_settings/renewals",
        ]
    );
    assert_eq!(dry.changes.len(), third.changes.len());
    let pause = &third.changes[0];
    assert_eq!(
        pause.old_value.as_ref().and_then(|v| v.enabled),
        Some(false)
    );
    assert_eq!(pause.new_value.enabled, Some(true));
    assert_eq!(pause.actor, bob);
    assert!(third.changes[2]
        .old_value
        .as_ref()
        .is_some_and(|v| v.campaign.is_some()));

    // What is on the topic now, through the view.
    let snapshot = read_table(&kafka, &topic).await?;
    let table = ControlTable::new(&topic);
    let view = table.view_of(&snapshot);
    assert_eq!(view.pause("acme", "enrolment"), Some(Pause::Campaign));
    assert_eq!(view.grid("acme").default_zone, chrono_tz::America::Chicago);
    assert_eq!(view.grid("globex").config.capacity_per_slot, 2);
    assert!(view.shadow_mode("globex"));
    let enrolment = view.campaign("acme", "enrolment");
    assert_eq!(enrolment.policy.voicemail_retry_minutes, vec![2880, 4320]);
    assert_eq!(enrolment.move_buffer, Duration::from_secs(15 * 60));
    // The dropped campaign falls back to the built-in settings.
    assert_eq!(
        view.campaign("globex", "renewals").origin,
        callstream_kit::control::Origin::BuiltIn
    );
    let key = callstream_kit::control::SettingKey::new(
        "acme",
        ControlSetting::CampaignPause,
        Some("enrolment"),
    );
    assert_eq!(
        view.change(&key).map(|c| c.actor.id.clone()),
        Some("bob".into())
    );

    let text = callstream_control::show::render_text(&snapshot, Some("acme"));
    assert!(
        text.contains("tenant acme") && text.contains("PAUSED") && !text.contains("globex"),
        "{text}"
    );
    let json = callstream_control::show::render_json(&snapshot, None);
    assert_eq!(json.as_array().map(Vec::len), Some(file.desired().len()));
    Ok(())
}

/// Emits, for each input keyed by tenant, what the view says about its
/// campaign `enrolment`: `<pause or go> <max attempts>`.
struct Reporter {
    control: ControlTable,
    output: String,
}

impl Processor for Reporter {
    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let tenant =
            String::from_utf8_lossy(record.key.as_deref().unwrap_or_default()).into_owned();
        let (pause, attempts) = {
            let view = self.control.view(ctx);
            (
                view.pause(&tenant, "enrolment"),
                view.campaign(&tenant, "enrolment").policy.max_attempts,
            )
        };
        let verdict = pause.map_or("go", Pause::reason);
        ctx.emit(Output::new(
            &self.output,
            tenant,
            format!("{verdict} {attempts}"),
        ));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_reads_what_apply_wrote_and_follows_the_next_apply() -> Result<()> {
    let (kafka, control) = control_topic().await?;
    let app = unique_name("ctl-reader");
    let (input, output) = (format!("{app}-in"), format!("{app}-out"));
    create_topic(&input, 2).await?;
    create_topic(&output, 2).await?;
    let file = ControlFile::parse(EXAMPLE)?;
    apply_file(
        &kafka,
        &control,
        &file,
        Actor::operator("alice"),
        None,
        false,
    )
    .await?;

    let spec = ProcessorSpec::new(&app, format!("{app}-dlq"))
        .input(&input)
        .global_table(&control);
    let running = Running::start(
        Reporter {
            control: ControlTable::new(&control),
            output: output.clone(),
        },
        spec,
        |_| {},
    );
    let outputs = reader(&output, 2)?;
    let producer = producer()?;
    produce(&producer, &input, "acme", b"1").await?;
    assert_eq!(next_value(&outputs, Duration::from_secs(60)).await?, "go 3");

    let paused = EXAMPLE.replace(
        "[tenants.acme]\npaused = false",
        "[tenants.acme]\npaused = true",
    );
    apply_file(
        &kafka,
        &control,
        &ControlFile::parse(&paused)?,
        Actor::operator("alice"),
        None,
        false,
    )
    .await?;
    // The change applies without a restart, from a record after it arrived.
    let mut value = String::new();
    for _ in 0..50 {
        produce(&producer, &input, "acme", b"2").await?;
        value = next_value(&outputs, Duration::from_secs(30)).await?;
        if value != "go 3" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(value, "system_paused 3");
    running.stop()?;
    Ok(())
}
