//! Every deterministic id callstream mints, in one place.
//!
//! An id is UUIDv5 over a namespace and a name built from what caused it,
//! so handling the same input again (a redelivered webhook, a replay after
//! an aborted transaction, a rebuild from offset 0) mints the same id and
//! downstream deduplication sees one record. Each rule is one named function
//! over [`derive`]; the tests pin every rule to known values, because ids
//! already on the topics, in changelogs and in providers' idempotency keys
//! were derived this way and must never change.
//!
//! The rules frame their names in the ways they were first written with
//! ([`Part`]): that is history, kept so stored ids stay valid. A new rule
//! should use [`Part::Framed`] for every part, which makes the name
//! unambiguous (no two different part lists share a name).

use sha1::{Digest, Sha1};
use uuid::Uuid;

/// Namespaces, fixed forever: every stored id depends on them.
pub mod namespace {
    use uuid::Uuid;

    /// What the gateway accepts (call events, launch requests) and what
    /// recovery republishes in their place.
    pub const GATEWAY: Uuid = Uuid::from_u128(0x6c1e_3c4f_9a0b_5d2e_8f71_0c2b_4a6d_9e13);
    /// The missing-completion case: the detector's and recovery's records.
    pub const COMPLETION_CASE: Uuid = Uuid::from_u128(0x1f0c_82a4_77d3_5b91_a0e6_3d58_c4b2_9e07);
    /// Events and jobs of the contact processor:
    /// UUIDv5(URL, "https://callstream.dev/ns/contact-processor").
    pub const CONTACT: Uuid = Uuid::from_u128(0xedaf3c4c_9eb7_5195_b63b_f72d06d948de);
    /// Launch operation ids: UUIDv5(URL, "https://callstream.dev/ns/launch").
    /// The dispatcher's effect ledger and the provider's idempotency keys
    /// are keyed by these.
    pub const LAUNCH: Uuid = Uuid::from_u128(0xb134ecbd_0d15_5e18_b1f8_6834725de0e1);
    /// The scheduler's events.
    pub const SCHEDULER: Uuid = Uuid::from_u128(0x6c1f_5d7e_2a3b_5c4d_9e8f_0a1b_2c3d_4e5f);
    /// The launch dispatcher's events.
    pub const LAUNCH_DISPATCHER: Uuid = Uuid::from_u128(0x4f3b_1d2a_7c6e_4b59_a0e8_13d5_c2f9_6a71);
    /// The CRM dispatcher's events:
    /// UUIDv5(URL, "https://callstream.dev/ns/crm-dispatcher").
    pub const CRM_DISPATCHER: Uuid = Uuid::from_u128(0x8b86_f0a1_94d0_556b_8d1e_7d50_0898_0979);
    /// CRM idempotency keys: UUIDv5(URL, "https://callstream.dev/ns/crm-command").
    /// Changing it would make every replayed command look new to the CRM.
    pub const CRM_COMMAND: Uuid = Uuid::from_u128(0xdae0757d_7bc7_5da9_b4d7_b03e45a23ad7);
    /// Dead letters as the views name them.
    pub const DEAD_LETTER: Uuid = Uuid::from_u128(0x2d1e_7a90_c4b3_5e6f_8a71_0b2c_d3e4_f5a6);
    /// The workflow's dedupe digests: UUIDv5(URL, "https://callstream.dev/ns/dedupe").
    /// Stored contact state holds digests made under it.
    pub const DEDUPE: Uuid = Uuid::from_u128(0x68c21c1b_ae41_5e39_b39c_2ecbd3738c8e);
    /// The notifier's notifications, messages and records.
    pub const NOTIFIER: Uuid = Uuid::from_u128(0x5a7c_91e2_3b4d_5f60_8e1a_2c3b_4d5e_6f70);
    /// What the projections write: the exceptions of records they skip.
    pub const PROJECTIONS: Uuid = Uuid::from_u128(0x0c12_333f_5f75_4c24_acbe_8053_881a_d767);
}

/// One part of an id's name, and how it is framed in the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// Its length as a big-endian u32, then its bytes (the framing of new rules).
    Framed(&'a [u8]),
    /// Its length as a big-endian u64, then its bytes (the contact processor's rules).
    Framed64(&'a [u8]),
    /// Its bytes as they are (the scheduler's and the dispatchers' rules,
    /// which join text with `/`).
    Raw(&'a [u8]),
}

/// UUIDv5 over `namespace` and the name the parts make: exactly
/// `Uuid::new_v5(namespace, name)` (a test holds it to that), hashed with
/// the `sha1` crate, which uses the CPU's SHA instructions, without building
/// the name in a buffer first. The gateway runs this once per request.
pub fn derive(namespace: &Uuid, parts: &[Part<'_>]) -> Uuid {
    let mut hash = Sha1::new();
    hash.update(namespace.as_bytes());
    for part in parts {
        match *part {
            Part::Framed(bytes) => frame32(&mut hash, bytes),
            Part::Framed64(bytes) => {
                hash.update((bytes.len() as u64).to_be_bytes());
                hash.update(bytes);
            }
            Part::Raw(bytes) => hash.update(bytes),
        }
    }
    finish(hash)
}

/// [`derive`] over text parts, each [`Part::Framed`] (without a list of parts to build).
pub fn derive_framed(namespace: &Uuid, parts: &[&str]) -> Uuid {
    let mut hash = Sha1::new();
    hash.update(namespace.as_bytes());
    for part in parts {
        frame32(&mut hash, part.as_bytes());
    }
    finish(hash)
}

fn frame32(hash: &mut Sha1, bytes: &[u8]) {
    hash.update(u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_be_bytes());
    hash.update(bytes);
}

fn finish(hash: Sha1) -> Uuid {
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_sha1_bytes(bytes).into_uuid()
}

/// Ids of what the gateway accepts and what recovery republishes in its place.
pub mod gateway {
    use super::{derive_framed, namespace::GATEWAY};
    use uuid::Uuid;

    /// A Twilio status callback: one per call, status and `SequenceNumber`,
    /// so a redelivered callback gets the id of its first delivery.
    pub fn twilio_call_event(tenant: &str, call_sid: &str, status: &str, sequence: &str) -> Uuid {
        derive_framed(&GATEWAY, &[tenant, "twilio", call_sid, status, sequence])
    }

    /// A JSON (Standard Webhooks) call event: one per webhook id.
    pub fn json_call_event(tenant: &str, webhook_id: &str) -> Uuid {
        derive_framed(&GATEWAY, &[tenant, "json", webhook_id])
    }

    /// The contact command of a launch request: one per tenant and request id.
    pub fn launch_request(tenant: &str, request_id: &str) -> Uuid {
        derive_framed(&GATEWAY, &[tenant, "launch-request", request_id])
    }

    /// The contact command of a contact update: one per tenant and request id.
    pub fn contact_update(tenant: &str, request_id: &str) -> Uuid {
        derive_framed(&GATEWAY, &[tenant, "contact-update", request_id])
    }
}

/// Ids of what recovery writes. A call record read back from Twilio takes
/// the gateway's own rule ([`gateway::twilio_call_event`]), so a replay of a
/// callback that did arrive carries the same id and downstream dedupe drops
/// it; the rest is derived from the launch.
pub mod recovery {
    use super::{derive_framed, namespace::GATEWAY};
    use uuid::Uuid;

    /// A call event recovered from a provider other than Twilio, whose
    /// deliveries are named by a webhook id a call record does not carry:
    /// this id at least never changes for one status.
    pub fn call_event(tenant: &str, provider: &str, call_id: &str, status: &str) -> Uuid {
        derive_framed(&GATEWAY, &["recovery", tenant, provider, call_id, status])
    }

    /// The call event that advances a contact without a call record (not
    /// found, or an operator's advance), one per launch and outcome.
    pub fn advance(tenant: &str, launch_id: &Uuid, outcome: &str) -> Uuid {
        let launch = launch_id.to_string();
        derive_framed(&GATEWAY, &["recovery-advance", tenant, &launch, outcome])
    }

    /// An audit event: one per launch, action and command (the system's own
    /// actions have no command).
    pub fn audit(launch_id: &Uuid, action: &str, command_id: Option<&Uuid>) -> Uuid {
        let launch = launch_id.to_string();
        let command = command_id.map(Uuid::to_string).unwrap_or_default();
        derive_framed(&GATEWAY, &["recovery-audit", &launch, action, &command])
    }

    /// The audit of lookup number `fetch` of a launch's case (numbered for the whole case,
    /// across an operator's restarts, so each lookup has its own).
    pub fn lookup_audit(launch_id: &Uuid, fetch: u32) -> Uuid {
        let launch = launch_id.to_string();
        derive_framed(
            &GATEWAY,
            &["recovery-lookup-audit", &launch, &fetch.to_string()],
        )
    }

    /// The audit of a command that found nothing to act on.
    pub fn rejected_command_audit(command_id: &Uuid) -> Uuid {
        derive_framed(
            &GATEWAY,
            &["recovery-audit-rejected", &command_id.to_string()],
        )
    }
}

/// Ids of the missing-completion case. Each is a pure function of the
/// launch (or tenant and bucket), so the detector and recovery, acting on
/// the same case, name the same records.
pub mod completion_case {
    use super::{derive, namespace::COMPLETION_CASE, Part::Framed};
    use uuid::Uuid;

    /// The `completion-missing` event of a launch.
    pub fn missing_event(launch_id: &Uuid) -> Uuid {
        derive(
            &COMPLETION_CASE,
            &[Framed(b"completion-missing"), Framed(launch_id.as_bytes())],
        )
    }

    /// The exception case a missing completion opens (type `completion_missing`).
    pub fn missing_exception(launch_id: &Uuid) -> Uuid {
        derive(
            &COMPLETION_CASE,
            &[
                Framed(b"exception/completion-missing"),
                Framed(launch_id.as_bytes()),
            ],
        )
    }

    /// The exception case a failed recovery opens (type `recovery_failed`).
    pub fn recovery_failed_exception(launch_id: &Uuid) -> Uuid {
        derive(
            &COMPLETION_CASE,
            &[
                Framed(b"exception/recovery-failed"),
                Framed(launch_id.as_bytes()),
            ],
        )
    }

    /// One event of an exception case: `change` names what happened to it
    /// (`open`, `resolved`, `ignored`, ...), so each change has its own id.
    pub fn exception_event(exception_id: &Uuid, change: &str) -> Uuid {
        derive(
            &COMPLETION_CASE,
            &[
                Framed(b"exception-event"),
                Framed(exception_id.as_bytes()),
                Framed(change.as_bytes()),
            ],
        )
    }

    /// The `completion-resolved` event closing a launch's case.
    pub fn resolved_event(launch_id: &Uuid) -> Uuid {
        derive(
            &COMPLETION_CASE,
            &[Framed(b"completion-resolved"), Framed(launch_id.as_bytes())],
        )
    }

    /// A delivery alert of a tenant, named by the bucket that raised it.
    pub fn alert(tenant: &str, bucket_start_ms: i64) -> Uuid {
        derive(
            &COMPLETION_CASE,
            &[
                Framed(b"delivery-alert"),
                Framed(tenant.as_bytes()),
                Framed(&bucket_start_ms.to_be_bytes()),
            ],
        )
    }

    /// One change of an alert (`raised`, `resolved`).
    pub fn alert_event(alert_id: &Uuid, change: &str) -> Uuid {
        derive(
            &COMPLETION_CASE,
            &[
                Framed(b"alert-event"),
                Framed(alert_id.as_bytes()),
                Framed(change.as_bytes()),
            ],
        )
    }

    /// Whether an operator's `ignore` naming `launch_id` and `exception_id`
    /// is about that launch's missing-completion case: it names one of the
    /// case's two exceptions, or the launch alone. Recovery judges those
    /// ignores and the contact processor every other one; both ask this,
    /// from the command alone, so exactly one of them audits each ignore.
    pub fn ignore_targets_case(launch_id: Option<Uuid>, exception_id: Option<Uuid>) -> bool {
        match (launch_id, exception_id) {
            (Some(launch), Some(exception)) => {
                exception == missing_exception(&launch)
                    || exception == recovery_failed_exception(&launch)
            }
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

/// Ids the contact processor mints.
/// Ids the views give entries that no event of their own carries.
pub mod view {
    use uuid::Uuid;

    /// The timeline entry of a job held at `held_at_ms` (the contact's state shows the hold
    /// in every record while it lasts; they all name this one entry). Under the contact
    /// namespace: the hold is the contact processor's decision.
    pub fn timeline_hold(job_id: Uuid, held_at_ms: i64) -> Uuid {
        super::contact::derived(job_id, &["timeline/held", &held_at_ms.to_string()])
    }

    /// A dead letter, by where it sits on its (physical) topic: a rebuild reads it there
    /// again and names it the same.
    pub fn dead_letter(topic: &str, partition: i32, offset: i64) -> Uuid {
        super::derive_framed(
            &super::namespace::DEAD_LETTER,
            &[topic, &partition.to_string(), &offset.to_string()],
        )
    }

    /// The exception of a record the projections skipped, by where it sits on its
    /// (physical) topic: every view that skips it, and every later run, names it the same.
    pub fn unappliable_record(topic: &str, partition: i32, offset: i64) -> Uuid {
        super::derive_framed(
            &super::namespace::PROJECTIONS,
            &[
                "unappliable",
                topic,
                &partition.to_string(),
                &offset.to_string(),
            ],
        )
    }

    /// The event that opens `exception_id` for one view (`*` when no view could read it).
    pub fn unappliable_record_event(exception_id: Uuid, view: &str) -> Uuid {
        super::derive_framed(
            &super::namespace::PROJECTIONS,
            &["unappliable-event", &exception_id.to_string(), view],
        )
    }
}

pub mod contact {
    use super::{
        derive,
        namespace::{CONTACT, LAUNCH},
        Part::Framed64,
    };
    use uuid::Uuid;

    /// The id of what `cause` led to, named by `what` (for example
    /// `schedule-request/plan` and the job id).
    pub fn derived(cause: Uuid, what: &[&str]) -> Uuid {
        let mut parts = Vec::with_capacity(what.len() + 1);
        parts.push(Framed64(cause.as_bytes()));
        parts.extend(what.iter().map(|w| Framed64(w.as_bytes())));
        derive(&CONTACT, &parts)
    }

    /// The stable operation id of a job's launch: one per tenant and job, so
    /// the same job can only ever launch under this one id.
    pub fn launch(tenant_id: &str, job_id: Uuid) -> Uuid {
        let job = job_id.to_string();
        derive(
            &LAUNCH,
            &[Framed64(tenant_id.as_bytes()), Framed64(job.as_bytes())],
        )
    }

    /// A uniform value in `[0, 1)` from an event id, for the policy's
    /// jitter: a replay of the event repeats it.
    pub fn jitter_of(event_id: Uuid) -> f64 {
        let bytes = derived(event_id, &["jitter"]).into_bytes();
        let mut high = [0u8; 8];
        high.copy_from_slice(&bytes[..8]);
        // 53 bits fill an f64 mantissa exactly, so the value is below 1.
        (u64::from_be_bytes(high) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Ids the scheduler mints: `kind` keeps the facts of one cause apart.
pub mod scheduler {
    use super::{
        derive,
        namespace::SCHEDULER,
        Part::{Framed64, Raw},
    };
    use uuid::Uuid;

    /// A fact of `kind` caused by `cause`.
    pub fn derived(kind: &str, cause: Uuid) -> Uuid {
        derive(
            &SCHEDULER,
            &[Raw(kind.as_bytes()), Raw(b"/"), Raw(cause.as_bytes())],
        )
    }

    /// A fact about a tenant's job (the tenant is part of it: job ids are
    /// only promised unique within a tenant).
    pub fn for_job(kind: &str, tenant: &str, job: Uuid) -> Uuid {
        derive(
            &SCHEDULER,
            &[
                Raw(kind.as_bytes()),
                Raw(b"/"),
                Framed64(tenant.as_bytes()),
                Raw(job.as_bytes()),
            ],
        )
    }

    /// A fact about a job's slot (a launch due at slot `slot`).
    pub fn for_slot(kind: &str, tenant: &str, job: Uuid, slot: u64) -> Uuid {
        derive(
            &SCHEDULER,
            &[
                Raw(kind.as_bytes()),
                Raw(b"/"),
                Framed64(tenant.as_bytes()),
                Raw(job.as_bytes()),
                Raw(&slot.to_be_bytes()),
            ],
        )
    }
}

/// Ids the launch dispatcher mints: over the launch id and what the event
/// says. A launch emits each status at most once, so `(launch, what)` is unique.
pub mod launch_dispatcher {
    use super::{derive, namespace::LAUNCH_DISPATCHER, Part::Raw};
    use uuid::Uuid;

    /// The event of `launch` that says `what` (`accepted`, `exception/open`, `audit/3`, ...).
    pub fn event(launch_id: &Uuid, what: &str) -> Uuid {
        let launch = launch_id.hyphenated().to_string();
        derive(
            &LAUNCH_DISPATCHER,
            &[Raw(launch.as_bytes()), Raw(b"/"), Raw(what.as_bytes())],
        )
    }
}

/// Ids the CRM dispatcher mints: over an operation id and the ordinal of the
/// result (or exception) for it, which the dispatcher's ledger counts.
pub mod crm_dispatcher {
    use super::{derive, namespace::CRM_DISPATCHER, Part::Raw};
    use uuid::Uuid;

    /// The `ordinal`-th event of `what` for operation (or exception, or command) `op`.
    pub fn event(op: &Uuid, what: &str, ordinal: u32) -> Uuid {
        let name = format!("{op}/{what}/{ordinal}");
        derive(&CRM_DISPATCHER, &[Raw(name.as_bytes())])
    }

    /// The id of the `ordinal`-th exception opened for operation `op`.
    pub fn exception(op: &Uuid, ordinal: u32) -> Uuid {
        event(op, "exception", ordinal)
    }
}

/// The idempotency key of a CRM command: one per tenant, call and action,
/// sent to the CRM as is, so a replayed outcome yields the same key.
pub fn crm_command(tenant_id: &str, call_id: &str, action: &str) -> Uuid {
    derive(
        &namespace::CRM_COMMAND,
        &[
            Part::Framed64(tenant_id.as_bytes()),
            Part::Framed64(call_id.as_bytes()),
            Part::Framed64(action.as_bytes()),
        ],
    )
}

/// The digests the contact workflow remembers to drop duplicate deliveries.
pub mod dedupe {
    use super::{
        derive,
        namespace::DEDUPE,
        Part::{Framed64, Raw},
    };
    use uuid::Uuid;

    /// A delivery seen by its event id.
    pub fn event(event_id: &str) -> Uuid {
        derive(&DEDUPE, &[Raw(b"e"), Raw(event_id.as_bytes())])
    }

    /// A delivery seen by its call and outcome (`outcome` as its wire name).
    pub fn call_outcome(call_id: &str, outcome: &str) -> Uuid {
        derive(
            &DEDUPE,
            &[
                Raw(b"c"),
                Framed64(call_id.as_bytes()),
                Raw(outcome.as_bytes()),
            ],
        )
    }
}

/// Ids of the notifier. A notification is named by its tenant, its channel and what it is
/// about, so routing the same alert, exception or dead letter again names the same one, and
/// the delivery ledger (and a receiver deduplicating by `webhook-id`) sees one.
pub mod notifier {
    use super::{derive_framed, namespace::NOTIFIER};
    use uuid::Uuid;

    /// A notification of `about` (`exception/<id>/open`, `alert/<event id>`,
    /// `dead_letter/<topic>/<partition>/<offset>`) on `channel`.
    pub fn notification(tenant: &str, channel: &str, about: &str) -> Uuid {
        derive_framed(&NOTIFIER, &["notification", tenant, channel, about])
    }

    /// The digest message of `digest_key` on a channel whose window ended at `until_ms`.
    pub fn digest(tenant: &str, channel: &str, digest_key: &str, until_ms: i64) -> Uuid {
        let until = until_ms.to_string();
        derive_framed(&NOTIFIER, &["digest", tenant, channel, digest_key, &until])
    }

    /// An alert the notifier raises itself: `kind` about `subject` (a processor, or empty)
    /// of `tenant`, raised at `since_ms`.
    pub fn watch_alert(tenant: &str, kind: &str, subject: &str, since_ms: i64) -> Uuid {
        let since = since_ms.to_string();
        derive_framed(&NOTIFIER, &["watch-alert", tenant, kind, subject, &since])
    }

    /// The event of such an alert's `status` (raised, resolved).
    pub fn watch_alert_event(alert_id: &Uuid, status: &str) -> Uuid {
        derive_framed(
            &NOTIFIER,
            &["watch-alert-event", &alert_id.to_string(), status],
        )
    }

    /// A record the notifier writes about message `message_id` (`sent`, `failed`, the
    /// failure's exception).
    pub fn record(message_id: &Uuid, what: &str) -> Uuid {
        derive_framed(&NOTIFIER, &["record", &message_id.to_string(), what])
    }
}

/// Ids of `control apply`.
pub mod control {
    use super::{derive, Part::Raw};
    use uuid::Uuid;

    /// The change event of one setting in one apply: the apply's id is the
    /// namespace and the setting's record key the name, so a retried publish
    /// of the same apply carries the same ids.
    pub fn change(apply_id: &Uuid, record_key: &str) -> Uuid {
        derive(apply_id, &[Raw(record_key.as_bytes())])
    }
}

#[cfg(test)]
mod tests;
