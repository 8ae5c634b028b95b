//! What a step sends into the open transaction: its outputs, or, for a
//! step the processor refused, its dead letter (logged and counted), so the
//! letter commits exactly when the offset or timer removal that goes with
//! it does. A child module of `core` so it works on the open transaction's
//! state directly.

use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::BaseRecord;
use tracing::warn;

use super::txn::produce;
use super::Core;
use crate::api::{Headers, Output};
use crate::dead_letter::{dead_letter, Cause};
use crate::metrics::HandlerLabels;
use crate::task::StepResult;

impl Core {
    /// Sends what one step produced into the open transaction. A step that
    /// failed (a record, timer or effect result the processor refused) sends
    /// its dead letter instead, in the same transaction: it commits exactly
    /// when the offset or timer removal that goes with it does.
    pub(super) fn emit(&mut self, result: StepResult, cause: &Cause<'_>) {
        if result.commit_requested {
            self.commit_requested = true;
        }
        if let Some(error) = &result.error {
            let source = cause.source();
            warn!(app = %self.spec.app_id, handler = cause.handler(), %source, %error,
                "processor failed; dead-lettered");
            let letter = dead_letter(
                &self.spec.app_id,
                &self.spec.dead_letter_topic,
                cause,
                &error.to_string(),
            );
            self.send(&letter);
            self.config.metrics.dead_letters.inc();
            self.config
                .metrics
                .handler_failures
                .get_or_create(&HandlerLabels {
                    handler: cause.handler(),
                })
                .inc();
        }
        for output in &result.outputs {
            self.send(output);
        }
        self.pending_effects.extend(result.effects);
        self.config
            .metrics
            .records_out
            .inc_by(result.outputs.len() as u64);
    }

    fn send(&mut self, output: &Output) {
        let mut record: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(&output.topic);
        // An empty header list still costs librdkafka an allocation a record.
        if !output.headers.is_empty() {
            record = record.headers(kafka_headers(&output.headers));
        }
        if let Some(key) = &output.key {
            record = record.key(key.as_slice());
        }
        if let Some(value) = &output.value {
            record = record.payload(value.as_slice());
        }
        if let Some(partition) = output.partition {
            record = record.partition(partition);
        }
        // An output without a cause is stamped with business time, never librdkafka's
        // system-clock default.
        let timestamp = output
            .timestamp_ms
            .unwrap_or_else(callstream_platform::clock::now_ms);
        record = record.timestamp(timestamp);
        self.send_record(record);
    }

    fn send_record(&mut self, record: BaseRecord<'_, [u8], [u8]>) {
        if !produce(&self.producer, record, &self.spec.app_id) {
            self.txn_failed = true;
        }
    }
}

fn kafka_headers(headers: &Headers) -> OwnedHeaders {
    headers
        .iter()
        .fold(OwnedHeaders::new(), |acc, (key, value)| {
            acc.insert(Header {
                key,
                value: Some(value),
            })
        })
}
