//! Every metric a callstream service registers, against the page that lists them
//! (`docs/metrics.md`) and the dashboard and alert rules that query them (`deploy/`): a
//! metric registered and not listed, listed and no longer registered, or queried and not
//! registered fails here. Each service's registries are built the way its binary builds
//! them (the processors' through `process_cmd`), so the names are the served ones.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use callstream_platform::metrics::family_names;

/// Metric names Prometheus itself adds to every target.
const SYNTHETIC: &[&str] = &["up", "scrape_duration_seconds", "scrape_samples_scraped"];

/// One service's metrics: the exposition, with one series in every labelled family (an
/// empty family is not encoded at all), and its registries' `Debug`, which names every
/// registered family, so a family left empty here is caught rather than missed.
struct Service {
    name: &'static str,
    exposition: String,
    debug: String,
}

fn service(name: &'static str, exposition: String, debug: String) -> Service {
    Service {
        name,
        exposition,
        debug,
    }
}

/// Every service's metrics, each family with a series.
fn services() -> Vec<Service> {
    let runtime = callstream_runtime::RuntimeMetrics::new("any");
    runtime
        .consumer_lag
        .get_or_create(&callstream_runtime::metrics::PartitionLabels {
            topic: "t".into(),
            partition: 0,
        })
        .set(0);

    let (contact, contact_registry) = crate::process_cmd::contact_registry();
    let ids = callstream_contact::telemetry::Ids {
        tenant: "t",
        contact: "c",
        event_id: uuid::Uuid::nil(),
    };
    contact.decision(
        callstream_contact::DecisionKind::Plan,
        uuid::Uuid::nil(),
        "r",
    );
    contact.rejected(&ids, "r", "d", 1);
    contact.duplicate(&ids, "call_event");

    let launch = callstream_launch_dispatcher::DispatchMetrics::new();
    launch.finished("t", "accepted");
    launch.ambiguous("r");
    launch.request("create", "accepted", Some(0.1));

    let crm = callstream_crm_dispatcher::CrmMetrics::new();
    crm.settled("t", "applied");
    crm.operator_retry("applied");
    crm.requests
        .get_or_create(&callstream_crm_dispatcher::telemetry::RequestLabels {
            request: "create".into(),
            outcome: "written".into(),
        })
        .inc();

    let notifier = callstream_notifier::NotifierMetrics::new();
    notifier.routed("alert.delivery_rate_low");
    notifier.refused("c");
    notifier.taken("c", callstream_notifier::outbox::Taken::Queued);
    notifier.retried("c");
    notifier.failed("c");
    notifier.sent(
        "c",
        &callstream_notifier::outbox::Message {
            message_id: uuid::Uuid::nil(),
            tenant: "t".into(),
            kind: "k".into(),
            severity: callstream_notifier::outbox::Severity::Info,
            title: String::new(),
            text: String::new(),
            link: None,
            count: 1,
            notifications: Vec::new(),
            attempts: 1,
        },
    );

    let gateway = callstream_gateway::metrics::Metrics::new();

    let api = callstream_operator_api::metrics::ApiMetrics::new();
    api.record("GET", "/v1/jobs", 200, 0.01);

    let projections = callstream_projections::Telemetry::new(
        Arc::new(callstream_projections::Stats::default()),
        0,
    )
    .with_example_series();

    vec![
        service(
            "runtime",
            runtime.encode(),
            format!("{:?}", runtime.registry),
        ),
        service(
            "contact",
            callstream_platform::metrics::encode(&contact_registry),
            format!("{contact_registry:?}"),
        ),
        service("launch-dispatcher", launch.encode(), format!("{launch:?}")),
        service("crm-dispatcher", crm.encode(), format!("{crm:?}")),
        service("notifier", notifier.encode(), format!("{notifier:?}")),
        service("gateway", gateway.encode(), format!("{gateway:?}")),
        service("operator-api", api.encode(), format!("{api:?}")),
        service(
            "projections",
            projections.encode(),
            format!("{projections:?}"),
        ),
    ]
}

/// The family names a registry's `Debug` lists (`Descriptor { name: "..."`), unprefixed.
fn descriptors(debug: &str) -> Vec<&str> {
    debug
        .split("Descriptor { name: \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect()
}

#[test]
fn every_registered_family_has_a_series_in_the_catalog() {
    for service in services() {
        let families = family_names(&service.exposition);
        let names = descriptors(&service.debug);
        assert!(!names.is_empty(), "{}: no registry found", service.name);
        for name in names {
            assert!(
                families.iter().any(|(family, _)| {
                    family.ends_with(name) || family.ends_with(&format!("{name}_total"))
                }),
                "{}: {name} is registered but has no series here; give it one in services()",
                service.name
            );
        }
    }
}

/// Every registered metric: its query name and type.
fn registered() -> BTreeMap<String, String> {
    services()
        .iter()
        .flat_map(|s| family_names(&s.exposition))
        .collect()
}

fn repo_file(path: &str) -> String {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()))
}

/// The metrics `docs/metrics.md` lists: its table rows that start with a metric name in
/// backquotes, with the type in the next column.
fn documented() -> BTreeMap<String, String> {
    repo_file("docs/metrics.md")
        .lines()
        .filter_map(|line| {
            let mut cells = line.split('|').map(str::trim).skip(1);
            let name = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
            let kind = cells.next()?;
            name.starts_with("callstream_")
                .then(|| (name.to_owned(), kind.to_owned()))
        })
        .collect()
}

/// Names in `text` that look like a callstream metric (or a Prometheus synthetic one),
/// with the `_bucket`, `_sum` and `_count` of a histogram mapped to the histogram.
fn queried(text: &str, registered: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("callstream_") {
        let start = i + at;
        let end = text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(text.len(), |n| start + n);
        // Only whole words: not a label value or a longer identifier's tail.
        let before = start.checked_sub(1).map(|b| bytes[b] as char);
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            let name = &text[start..end];
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| {
                    let base = name.strip_suffix(suffix)?;
                    (registered.get(base).map(String::as_str) == Some("histogram")).then_some(base)
                })
                .unwrap_or(name);
            names.insert(base.to_owned());
        }
        i = end;
    }
    names
}

#[test]
fn every_registered_metric_is_on_the_page_and_every_listed_one_is_registered() {
    let registered = registered();
    let documented = documented();
    let missing: Vec<_> = registered
        .iter()
        .filter(|(name, _)| !documented.contains_key(*name))
        .collect();
    let stale: Vec<_> = documented
        .keys()
        .filter(|name| !registered.contains_key(*name))
        .collect();
    assert!(
        missing.is_empty(),
        "registered but not in docs/metrics.md: {missing:?}"
    );
    assert!(
        stale.is_empty(),
        "in docs/metrics.md but registered by no service: {stale:?}"
    );
    for (name, kind) in &registered {
        assert_eq!(
            documented.get(name),
            Some(kind),
            "docs/metrics.md gives {name} another type"
        );
    }
}

#[test]
fn metric_names_follow_the_prometheus_conventions() {
    for (name, kind) in registered() {
        assert!(
            name.starts_with("callstream_"),
            "{name}: no callstream_ prefix"
        );
        match kind.as_str() {
            "counter" => assert!(name.ends_with("_total"), "{name}"),
            "histogram" => assert!(name.ends_with("_seconds"), "{name}: not in seconds"),
            _ => assert!(
                !name.ends_with("_total"),
                "{name}: a {kind} named like a counter"
            ),
        }
        for unit in ["_ms", "_millis", "_milliseconds", "_minutes", "_kb", "_mb"] {
            assert!(!name.contains(unit), "{name}: not a base unit");
        }
    }
}

/// Every metric a query of the dashboard or the alert rules names is registered.
#[test]
fn the_dashboard_and_the_alert_rules_query_only_registered_metrics() {
    let registered = registered();
    for file in [
        "deploy/grafana/callstream.json",
        "deploy/prometheus/alerts.yml",
    ] {
        let names = queried(&repo_file(file), &registered);
        assert!(!names.is_empty(), "{file} queries no callstream metric");
        let unknown: Vec<_> = names
            .iter()
            .filter(|n| !registered.contains_key(*n) && !SYNTHETIC.contains(&n.as_str()))
            .collect();
        assert!(
            unknown.is_empty(),
            "{file} queries unregistered metrics: {unknown:?}"
        );
    }
}

#[test]
fn the_dashboard_draws_what_an_operator_watches() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&repo_file("deploy/grafana/callstream.json"))
            .expect("the dashboard is JSON");
    let titles: Vec<String> = dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["title"].as_str())
        .map(str::to_lowercase)
        .collect();
    for wanted in [
        "delivery rate",
        "consumer lag",
        "commit latency",
        "webhook outcomes",
        "open exceptions",
    ] {
        assert!(
            titles.iter().any(|t| t.contains(wanted)),
            "no panel on {wanted} in {titles:?}"
        );
    }
}

#[test]
fn query_names_are_read_as_words_and_histograms_by_their_base() {
    let registered: BTreeMap<String, String> =
        [("callstream_x_seconds".to_owned(), "histogram".to_owned())].into();
    let names = queried(
        r#"rate(callstream_x_seconds_bucket[5m]) + my_callstream_y + callstream_z_total"#,
        &registered,
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec!["callstream_x_seconds", "callstream_z_total"]
    );
}

#[test]
#[ignore = "prints the catalog"]
fn print_catalog() {
    for service in services() {
        for line in service.exposition.lines().filter(|l| l.starts_with("# ")) {
            println!("{}: {line}", service.name);
        }
    }
}
