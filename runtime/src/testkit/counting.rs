//! A processor for testing the runtime itself (and for benchmarks): small,
//! with outputs that make loss and duplication visible.

use crate::api::{Context, Output, ProcessError, Processor, Record};

/// Keeps a count per key in the store `counts` and emits, for every input,
/// one output `<input value>:<count after it>` keyed like the input.
/// Inputs whose value is not UTF-8 are refused (they go to the dead letters).
#[derive(Debug, Clone)]
pub struct CountingProcessor {
    pub output_topic: String,
}

pub const COUNTS_STORE: &str = "counts";

impl Processor for CountingProcessor {
    fn stores(&self) -> &'static [&'static str] {
        &[COUNTS_STORE]
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let key = record.key.clone().unwrap_or_default();
        let value = record.value.as_deref().unwrap_or_default();
        let text = std::str::from_utf8(value).map_err(|e| ProcessError::Decode(e.to_string()))?;
        let count = match ctx.get(COUNTS_STORE, &key) {
            Some(bytes) => {
                decode_count(bytes).ok_or_else(|| ProcessError::Invalid("corrupt count".into()))?
            }
            None => 0,
        } + 1;
        ctx.put(COUNTS_STORE, key.clone(), count.to_be_bytes().to_vec());
        ctx.emit(Output::new(
            &self.output_topic,
            key,
            format!("{text}:{count}"),
        ));
        Ok(())
    }
}

/// Reads a count written by `CountingProcessor`.
pub fn decode_count(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}
