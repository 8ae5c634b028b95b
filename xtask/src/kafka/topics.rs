//! The topics a test run makes, deleted when the run passes.
//!
//! Why: every test makes its own topics, so without this a dev broker's storage grows by
//! about a thousand partitions a run, and a broker holding a few runs' worth takes minutes to
//! load them at start. Why a before/after difference rather than name patterns: tests name
//! their topics as they need (a random part somewhere); what appeared during the run is the
//! run's. A failed run keeps its topics for inspection and lists them in
//! `.stack/test-topics.txt`; the next run deletes them first.

use std::collections::BTreeSet;
use std::fs;

use anyhow::{Context, Result};

use crate::layout::{self, Layout};

const TOPIC_COMMAND: &str = "org.apache.kafka.tools.TopicCommand";
/// Names per `--delete` call: one JVM start deletes this many, and the regex stays short.
const DELETE_BATCH: usize = 400;

/// Every topic on the dev broker except Kafka's internal ones.
pub fn list(layout: &Layout) -> Result<BTreeSet<String>> {
    let java = super::dist::java()?;
    let bootstrap = layout::kafka_bootstrap();
    let out = super::run_tool(
        layout,
        &java,
        TOPIC_COMMAND,
        &[
            "--bootstrap-server",
            &bootstrap,
            "--list",
            "--exclude-internal",
        ],
    )?;
    Ok(out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect())
}

/// Deletes `names` (those already gone are skipped). The broker removes their data in the
/// background.
pub fn delete(layout: &Layout, names: &BTreeSet<String>) -> Result<()> {
    let java = super::dist::java()?;
    let bootstrap = layout::kafka_bootstrap();
    let names: Vec<&String> = names.iter().collect();
    for batch in names.chunks(DELETE_BATCH) {
        let pattern = exact_names_regex(batch.iter().map(|n| n.as_str()));
        super::run_tool(
            layout,
            &java,
            TOPIC_COMMAND,
            &[
                "--bootstrap-server",
                &bootstrap,
                "--delete",
                "--if-exists",
                "--topic",
                &pattern,
            ],
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

/// Deletes the topics a failed earlier run left (listed in the leftovers file), then forgets
/// them. Returns how many there were.
pub fn delete_leftovers(layout: &Layout) -> Result<usize> {
    let file = layout.test_topics_file();
    let Ok(text) = fs::read_to_string(&file) else {
        return Ok(0);
    };
    let names: BTreeSet<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    delete(layout, &names)?;
    fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
    Ok(names.len())
}

/// Remembers topics a failed run kept, for the next run to delete.
pub fn keep_for_inspection(layout: &Layout, names: &BTreeSet<String>) -> Result<()> {
    let file = layout.test_topics_file();
    let mut text = fs::read_to_string(&file).unwrap_or_default();
    for name in names {
        text.push_str(name);
        text.push('\n');
    }
    fs::write(&file, text).with_context(|| format!("writing {}", file.display()))
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
