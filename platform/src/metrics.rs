//! Serving Prometheus metrics: every callstream registry is a
//! prometheus-client one, rendered as OpenMetrics text. A scrape that
//! concatenates several registries must still be one valid exposition: the
//! `# EOF` each ends with is kept once, at the very end, and the whole is
//! served with OpenMetrics' media type (Prometheus parses it by that type).

use axum::http::header;
use axum::response::{IntoResponse, Response};
use prometheus_client::registry::Registry;

/// The media type of an OpenMetrics text exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `registry` as OpenMetrics text (ending in `# EOF`).
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, registry);
    out
}

/// Several registries' text as one exposition: each ends in OpenMetrics'
/// `# EOF`, which a scraper stops at, so it is kept once, at the very end.
pub fn merge_expositions(parts: &[String]) -> String {
    let mut out = String::with_capacity(parts.iter().map(String::len).sum::<usize>() + 6);
    for line in parts
        .iter()
        .flat_map(|p| p.lines())
        .filter(|l| *l != "# EOF")
    {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("# EOF\n");
    out
}

/// An exposition as a `/metrics` answer, with OpenMetrics' media type.
pub fn response(exposition: String) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], exposition).into_response()
}

/// The metric family names an exposition declares (`# TYPE <name> <type>`),
/// with the name a query uses: counters get their `_total`. For tests that
/// compare what is registered with what the documentation lists.
pub fn family_names(exposition: &str) -> Vec<(String, String)> {
    exposition
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| {
            let (name, kind) = rest.split_once(' ')?;
            let name = match kind {
                "counter" => format!("{name}_total"),
                _ => name.to_owned(),
            };
            Some((name, kind.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;

    use super::*;

    #[test]
    fn merged_expositions_keep_every_metric_and_end_in_one_eof() {
        let runtime = "# HELP a A.\n# TYPE a counter\na_total 1\n# EOF\n".to_owned();
        let own = "# HELP b B.\n# TYPE b counter\nb_total 2\n# EOF\n".to_owned();
        let merged = merge_expositions(&[runtime, own]);
        assert_eq!(
            merged,
            "# HELP a A.\n# TYPE a counter\na_total 1\n# HELP b B.\n# TYPE b counter\nb_total 2\n# EOF\n"
        );
    }

    #[test]
    fn family_names_are_the_names_queries_use() {
        let mut registry = Registry::with_prefix("callstream_x");
        registry.register("things", "Things", Counter::<u64>::default());
        let names = family_names(&encode(&registry));
        assert_eq!(
            names,
            vec![("callstream_x_things_total".to_owned(), "counter".to_owned())]
        );
    }
}
