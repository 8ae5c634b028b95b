//! The exceptions of records the projections skip: a record Postgres refuses for a
//! reason retrying cannot fix, or one that is not a callstream event, leaves a view
//! without it, and an operator must hear of it (see `callstream_domain::failures`).
//!
//! Guarantees: each skip opens an `unappliable_record` exception on the `exceptions`
//! topic, delivered (acknowledged by every in-sync replica) before the batch that skipped
//! it commits its offsets, so a crash never loses one. A crash between the two repeats
//! it under the same event id (the exception is named by the record's place on its
//! topic, the event by that and the view), which the views and the notifier take once.
//! A skipped record that is itself an `unappliable_record` exception opens none, so a
//! table that refuses every exception cannot feed itself. A rebuild reports nothing: the
//! live run already did for every record it reads again.

use std::time::Duration;

use callstream_domain::failures::PermanentFailure;
use callstream_domain::ids::view as ids;
use callstream_platform::KafkaSettings;
use callstream_schemas::{
    Actor, AnyEvent, Event, ExceptionEvent, ExceptionStatus, ExceptionType, Timestamp,
};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use crate::error::ProjectionError;

/// Who the exceptions name as their actor.
const ACTOR: &str = "callstream-projections";
/// The tenant of a record whose tenant cannot be read: only the deployment's routes
/// (`*`) see it.
const NO_TENANT: &str = "*";
/// Longest a report waits for the broker before the batch is retried.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// A record one view skipped, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The view that skipped it (`None`: not an event, so no view could read it).
    pub view: Option<&'static str>,
    /// Physical topic, partition and offset.
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// What Postgres or the decoder said.
    pub error: String,
    /// The event's envelope, when it decoded: its tenant, contact and ids.
    pub tenant_id: Option<String>,
    pub contact_id: Option<String>,
    pub event_id: Option<uuid::Uuid>,
    pub correlation_id: Option<uuid::Uuid>,
    /// An exception event of the same kind (never reported, see the module).
    pub is_own_kind: bool,
}

impl Skipped {
    /// A record of `event` that `view` could not apply.
    pub fn refused(
        view: &'static str,
        topic: &str,
        partition: i32,
        offset: i64,
        event: &AnyEvent,
        error: String,
    ) -> Self {
        let envelope = event.envelope();
        let is_own_kind = matches!(event, AnyEvent::ExceptionEvent(e)
            if e.exception_type == ExceptionType::UnappliableRecord);
        let contact_id = contact_of(event);
        Self {
            view: Some(view),
            topic: topic.to_owned(),
            partition,
            offset,
            error,
            tenant_id: Some(envelope.tenant_id.to_owned()),
            contact_id,
            event_id: Some(envelope.event_id),
            correlation_id: envelope.correlation_id,
            is_own_kind,
        }
    }

    /// A record that is not a callstream event.
    pub fn undecodable(topic: &str, partition: i32, offset: i64, error: String) -> Self {
        Self {
            view: None,
            topic: topic.to_owned(),
            partition,
            offset,
            error,
            tenant_id: None,
            contact_id: None,
            event_id: None,
            correlation_id: None,
            is_own_kind: false,
        }
    }

    /// The exception event this skip opens.
    pub fn exception(&self, at: Timestamp) -> ExceptionEvent {
        let exception_id = ids::unappliable_record(&self.topic, self.partition, self.offset);
        let view = self.view.unwrap_or("*");
        let place = format!("{}/{}/{}", self.topic, self.partition, self.offset);
        let what = match self.view {
            Some(view) => format!("the {view} view could not apply the record at {place}"),
            None => format!("the record at {place} is not a callstream event"),
        };
        // Errors from Postgres name constraints and values, never whole rows; cut long ones.
        let error: String = self.error.chars().take(300).collect();
        ExceptionEvent {
            event_id: ids::unappliable_record_event(exception_id, view),
            tenant_id: self
                .tenant_id
                .clone()
                .unwrap_or_else(|| NO_TENANT.to_owned()),
            occurred_at: at,
            causation_id: self.event_id,
            correlation_id: self.correlation_id,
            exception_id,
            status: ExceptionStatus::Open,
            exception_type: ExceptionType::from(PermanentFailure::UnappliableRecord),
            urgent: false,
            // Not always about a lead: the record's place stands where the contact would.
            contact_id: self
                .contact_id
                .clone()
                .unwrap_or_else(|| format!("record:{place}")),
            campaign_id: None,
            job_id: None,
            launch_id: None,
            call_id: None,
            operation_id: None,
            reason: PermanentFailure::UnappliableRecord.as_str().to_owned(),
            detail: Some(format!(
                "{what}, and skipped it: {error}. The view lacks it until the cause is \
                 fixed and the view rebuilt."
            )),
            actor: Actor::system(ACTOR),
            assignee: None,
        }
    }
}

/// The contact an event is about, for the event types that name one.
fn contact_of(event: &AnyEvent) -> Option<String> {
    let contact = match event {
        AnyEvent::CallEvent(e) => &e.contact_id,
        AnyEvent::ContactCommand(e) => &e.contact_id,
        AnyEvent::ScheduleRequest(e) => &e.contact_id,
        AnyEvent::ScheduleEvent(e) => &e.contact_id,
        AnyEvent::LaunchCommand(e) => &e.contact_id,
        AnyEvent::CallLaunch(e) => &e.contact_id,
        AnyEvent::CompletionMissing(e) => &e.contact_id,
        AnyEvent::CompletionResolved(e) => &e.contact_id,
        AnyEvent::CrmCommand(e) => &e.contact_id,
        AnyEvent::CrmResult(e) => &e.contact_id,
        AnyEvent::ExceptionEvent(e) => &e.contact_id,
        AnyEvent::ContactState(e) => &e.contact_id,
        AnyEvent::ControlChange(_)
        | AnyEvent::Alert(_)
        | AnyEvent::AuditEvent(_)
        | AnyEvent::Notification(_) => return None,
    };
    Some(contact.clone())
}

/// Writes the exceptions of skipped records.
#[derive(Clone)]
pub struct Reporter {
    producer: FutureProducer,
    topic: String,
}

impl Reporter {
    pub fn new(kafka: &KafkaSettings, exceptions_topic: String) -> Result<Self, ProjectionError> {
        let producer = kafka.producer_config().create()?;
        Ok(Self {
            producer,
            topic: exceptions_topic,
        })
    }

    /// Opens the exception of every skip (but those of the module's exception), and waits
    /// until the broker has them all.
    pub async fn report(&self, skipped: &[Skipped]) -> Result<(), ProjectionError> {
        let now = callstream_platform::clock::now_utc();
        for skip in skipped.iter().filter(|s| !s.is_own_kind) {
            let event = skip.exception(now);
            let bytes = event
                .encode()
                .map_err(|e| ProjectionError::Config(format!("encoding an exception: {e}")))?;
            let mut headers = OwnedHeaders::new();
            for (name, value) in event.kafka_headers() {
                headers = headers.insert(Header {
                    key: name,
                    value: Some(value.as_bytes()),
                });
            }
            let record = FutureRecord::to(&self.topic)
                .key(&event.contact_id)
                .payload(&bytes)
                .headers(headers);
            self.producer
                .send(record, DELIVERY_TIMEOUT)
                .await
                .map_err(|(e, _)| ProjectionError::Kafka(e))?;
            tracing::warn!(topic = %skip.topic, partition = skip.partition, offset = skip.offset,
                view = skip.view.unwrap_or("*"), exception_id = %event.exception_id,
                "unappliable record: exception opened");
        }
        Ok(())
    }
}
