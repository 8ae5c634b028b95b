//! The counting processor with Avro values, for the framing comparison: every
//! input is a `CallEvent` (as the gateway writes them), decoded; a count per
//! key is read and written in the store as the runtime's `CountingProcessor`
//! keeps it; and every input gives one output `CallEvent` (a new id, the
//! input as its cause, the count as its sequence number), encoded and given
//! its event headers by `callstream_kit::emit`, as every processor writes
//! events. Decode and encode take whichever framing the bytes have and this
//! process writes: the only difference between the two framings' runs.
//!
//! The latency run's stamps (`w<n>`, `t<µs>`) travel in `provider_event_id`,
//! which the output keeps.

use callstream_kit::emit::{output_or_refuse, timestamp};
use callstream_runtime::testkit::{decode_count, COUNTS_STORE};
use callstream_runtime::{Context, ProcessError, Processor, Record};
use callstream_schemas::{CallEvent, CallEventSource, CallOutcome, Event};
use uuid::Uuid;

/// Namespace of the outputs' event ids (derived from the input's, as processors derive theirs).
const OUTPUT_IDS: Uuid = Uuid::from_u128(0x6361_6c6c_7374_7265_616d_2d62_656e_6368);

/// See the module header.
#[derive(Debug, Clone)]
pub struct AvroCountingProcessor {
    pub output_topic: String,
}

impl Processor for AvroCountingProcessor {
    fn stores(&self) -> &'static [&'static str] {
        &[COUNTS_STORE]
    }

    fn process(&mut self, ctx: &mut Context<'_>, record: &Record) -> Result<(), ProcessError> {
        let key = record.key.clone().unwrap_or_default();
        let value = record.value.as_deref().unwrap_or_default();
        let input = CallEvent::decode(value).map_err(|e| ProcessError::Decode(e.to_string()))?;
        let count = match ctx.get(COUNTS_STORE, &key) {
            Some(bytes) => {
                decode_count(bytes).ok_or_else(|| ProcessError::Invalid("corrupt count".into()))?
            }
            None => 0,
        } + 1;
        ctx.put(COUNTS_STORE, key, count.to_be_bytes().to_vec());
        let output = CallEvent {
            event_id: Uuid::new_v5(&OUTPUT_IDS, input.event_id.as_bytes()),
            causation_id: Some(input.event_id),
            sequence_number: Some(i64::try_from(count).unwrap_or(i64::MAX)),
            ..input
        };
        let key = output.contact_id.clone();
        ctx.emit(output_or_refuse(&self.output_topic, &key, &output)?);
        Ok(())
    }
}

/// Input `i` for contact (record key) `key`, carrying `stamp` in `provider_event_id`: a
/// completed Twilio call, as the gateway would have written it.
pub fn call_event(run: u64, i: u64, key: &str, stamp: String) -> CallEvent {
    // Milliseconds, as events carry their times.
    let now = timestamp(chrono::Utc::now().timestamp_millis());
    CallEvent {
        event_id: Uuid::from_u64_pair(run, i),
        tenant_id: "bench".into(),
        occurred_at: now,
        causation_id: None,
        correlation_id: Some(Uuid::from_u64_pair(run, i | 1 << 63)),
        provider: "twilio".into(),
        integration_id: Some("bench-twilio".into()),
        provider_event_id: stamp,
        call_id: format!("CA{run:016x}{i:016x}"),
        contact_id: key.to_string(),
        launch_id: Some(Uuid::from_u64_pair(!run, i)),
        campaign_id: Some("bench-campaign".into()),
        source: CallEventSource::Live,
        provider_status: "completed".into(),
        outcome: CallOutcome::Answered,
        answered_by: Some("human".into()),
        duration_seconds: Some(31),
        sequence_number: Some(3),
        provider_error: None,
        reported_time_zone: None,
        received_at: now,
        analysis: None,
    }
}

/// The stamp an output carries (its `provider_event_id`), if it decodes.
pub fn stamp_of(value: &[u8]) -> Option<String> {
    CallEvent::decode(value).ok().map(|e| e.provider_event_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_encode_and_carry_their_stamp() {
        let event = call_event(7, 42, "k42", "t123".into());
        let bytes = event.encode().unwrap();
        assert_eq!(stamp_of(&bytes).as_deref(), Some("t123"));
        assert_eq!(CallEvent::decode(&bytes).unwrap(), event);
        assert_eq!(stamp_of(b"not avro"), None);
    }
}
