//! The topics a test run makes, deleted when the run passes: on the dev broker, and on the
//! three-broker cluster for the tests of its phase.
//!
//! Why: every test makes its own topics, so without this a broker's storage grows by about a
//! thousand partitions a run, and a broker holding a few runs' worth takes minutes to load
//! them at start (the cluster, holding 18 runs of `broker_death`'s, once kept its restarted
//! brokers out of the in-sync sets for longer than that test waits). Why a before/after
//! difference rather than name patterns: tests name their topics as they need (a random part
//! somewhere); what appeared during the run is the run's. A failed run keeps its topics for
//! inspection and lists them in the broker's leftovers file (`.stack/test-topics.txt`,
//! `.stack/cluster/test-topics.txt`); the next run deletes them first.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::layout::{self, Layout};

/// A broker whose test topics are cleaned up: where it listens, the client settings to reach
/// it with, and where a failed run's topics are listed.
pub struct Broker {
    bootstrap: String,
    /// The admin's `--command-config` (the cluster takes only SASL_SSL); none for the dev
    /// broker's plaintext listener.
    command_config: Option<String>,
    leftovers: PathBuf,
}

impl Broker {
    /// The dev broker (`cargo xtask up`).
    pub fn dev(layout: &Layout) -> Self {
        Self {
            bootstrap: layout::kafka_bootstrap(),
            command_config: None,
            leftovers: layout.test_topics_file(),
        }
    }

    /// The three-broker cluster (`cargo xtask up --cluster`), as its admin.
    pub fn cluster(layout: &Layout) -> Self {
        Self {
            bootstrap: crate::cluster::config::bootstrap(),
            command_config: Some(
                crate::cluster::admin_client_file(layout)
                    .display()
                    .to_string(),
            ),
            leftovers: layout.cluster_dir().join("test-topics.txt"),
        }
    }

    /// Where a failed run's topics are listed.
    pub fn leftovers_file(&self) -> &PathBuf {
        &self.leftovers
    }

    /// `TopicCommand`'s connection arguments, then `args`.
    fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["--bootstrap-server", self.bootstrap.as_str()];
        if let Some(config) = &self.command_config {
            all.extend(["--command-config", config.as_str()]);
        }
        all.extend_from_slice(args);
        all
    }
}

const TOPIC_COMMAND: &str = "org.apache.kafka.tools.TopicCommand";
/// Names per `--delete` call: one JVM start deletes this many, and the regex stays short.
const DELETE_BATCH: usize = 400;

/// Every topic on `broker` except Kafka's internal ones.
pub fn list(layout: &Layout, broker: &Broker) -> Result<BTreeSet<String>> {
    let java = super::dist::java()?;
    let out = super::run_tool(
        layout,
        &java,
        TOPIC_COMMAND,
        &broker.args(&["--list", "--exclude-internal"]),
    )?;
    Ok(out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect())
}

/// Deletes `names` from `broker` (those already gone are skipped). The broker removes their
/// data in the background.
pub fn delete(layout: &Layout, broker: &Broker, names: &BTreeSet<String>) -> Result<()> {
    let java = super::dist::java()?;
    let names: Vec<&String> = names.iter().collect();
    for batch in names.chunks(DELETE_BATCH) {
        let pattern = exact_names_regex(batch.iter().map(|n| n.as_str()));
        super::run_tool(
            layout,
            &java,
            TOPIC_COMMAND,
            &broker.args(&["--delete", "--if-exists", "--topic", &pattern]),
        )?;
    }
    Ok(())
}

/// A Java regex matching exactly these topic names. Topic names are `[a-zA-Z0-9._-]`, so the
/// dot is the only character to escape.
fn exact_names_regex<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let alternatives: Vec<String> = names.map(|n| n.replace('.', "\\.")).collect();
    format!("^(?:{})$", alternatives.join("|"))
}

/// Deletes the topics a failed earlier run left on `broker` (listed in its leftovers file),
/// then forgets them. Returns how many there were.
pub fn delete_leftovers(layout: &Layout, broker: &Broker) -> Result<usize> {
    let file = &broker.leftovers;
    let Ok(text) = fs::read_to_string(file) else {
        return Ok(0);
    };
    let names: BTreeSet<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    delete(layout, broker, &names)?;
    fs::remove_file(file).with_context(|| format!("removing {}", file.display()))?;
    Ok(names.len())
}

/// Remembers topics a failed run kept on `broker`, for the next run to delete.
pub fn keep_for_inspection(broker: &Broker, names: &BTreeSet<String>) -> Result<()> {
    let file = &broker.leftovers;
    let mut text = fs::read_to_string(file).unwrap_or_default();
    for name in names {
        text.push_str(name);
        text.push('\n');
    }
    fs::write(file, text).with_context(|| format!("writing {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_regex_matches_exactly_the_names() {
        let pattern = exact_names_regex(["a.b-1", "c_d"].into_iter());
        assert_eq!(pattern, r"^(?:a\.b-1|c_d)$");
    }
}
