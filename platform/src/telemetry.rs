//! Logging set-up: JSON lines by default (for log shippers), plain text when
//! `CALLSTREAM_LOG_FORMAT=text`. The filter comes from `RUST_LOG`.
//!
//! Every line names the service that wrote it (`"service"` in JSON, a
//! leading word in text), so lines of several services in one stream (the
//! demo, a log shipper's index) can be told apart. Span fields (the
//! runtime's `correlation_id` of the record being handled, for one) come
//! with each line under `"span"` and `"spans"`.

use std::fmt;

use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{format, FmtContext};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber once, naming the service after the
/// binary; later calls are no-ops, so tests and binaries can both call it.
pub fn init_tracing(default_filter: &str) {
    let service = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "callstream".to_owned());
    init_service_tracing(&service, default_filter);
}

/// Installs the global subscriber once, every line naming `service`.
pub fn init_service_tracing(service: &str, default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let text = std::env::var("CALLSTREAM_LOG_FORMAT").is_ok_and(|f| f == "text");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // `try_init` fails only when a subscriber is already installed.
    let _ = if text {
        builder
            .event_format(WithService::text(service, format()))
            .try_init()
    } else {
        builder
            .fmt_fields(format::JsonFields::new())
            .event_format(WithService::json(
                service,
                format().json().flatten_event(true),
            ))
            .try_init()
    };
}

/// An event format that adds the service's name to what `inner` writes.
struct WithService<F> {
    inner: F,
    /// JSON: `"service":"<name>",` (quoted once, here); text: `<name> `.
    prefix: String,
    json: bool,
}

impl<F> WithService<F> {
    fn json(service: &str, inner: F) -> Self {
        Self {
            inner,
            prefix: format!("\"service\":{},", json_string(service)),
            json: true,
        }
    }

    fn text(service: &str, inner: F) -> Self {
        Self {
            inner,
            prefix: format!("{service} "),
            json: false,
        }
    }
}

impl<S, N, F> FormatEvent<S, N> for WithService<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if !self.json {
            writer.write_str(&self.prefix)?;
            return self.inner.format_event(ctx, writer, event);
        }
        // The JSON object is written whole by `inner`; the field goes in
        // right after its opening brace. Log lines are not the hot path.
        let mut line = String::with_capacity(256);
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => {
                writer.write_char('{')?;
                writer.write_str(&self.prefix)?;
                writer.write_str(rest)
            }
            None => writer.write_str(&line),
        }
    }
}

/// `text` as a JSON string literal.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?
                .extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;

        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    #[test]
    fn json_lines_name_the_service_and_carry_span_fields() {
        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .fmt_fields(format::JsonFields::new())
            .event_format(WithService::json(
                "contact",
                format().json().flatten_event(true),
            ))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let _record = tracing::info_span!("record", correlation_id = "c-42").entered();
            tracing::warn!(tenant = "acme", "transition rejected");
        });
        let bytes = captured.0.lock().map(|b| b.clone()).unwrap_or_default();
        let line = String::from_utf8_lossy(&bytes);
        assert!(
            line.starts_with(r#"{"service":"contact","#),
            "no service first: {line}"
        );
        assert!(line.contains(r#""correlation_id":"c-42""#), "{line}");
        assert!(line.contains(r#""tenant":"acme""#), "{line}");
    }

    #[test]
    fn service_names_are_quoted_as_json() {
        assert_eq!(json_string("a\"b\\c\n"), r#""a\"b\\c\u000a""#);
    }
}
