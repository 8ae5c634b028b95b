//! Deterministic ids of everything the missing-completion case produces.
//!
//! Guarantee: each id is a pure function of the launch (or tenant and
//! bucket), so a replay after a crash, or a second component acting on the
//! same case (recovery resolving the exception the detector opened), names
//! the same record and downstream dedupe sees one case.

use uuid::Uuid;

/// Namespace of the ids derived here (UUIDv5).
pub const NAMESPACE: Uuid = Uuid::from_u128(0x1f0c_82a4_77d3_5b91_a0e6_3d58_c4b2_9e07);

/// UUIDv5 over length-prefixed parts, so no two part lists share a name.
pub fn derive(parts: &[&[u8]]) -> Uuid {
    let mut name = Vec::with_capacity(parts.iter().map(|p| p.len() + 4).sum());
    for part in parts {
        name.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
        name.extend_from_slice(part);
    }
    Uuid::new_v5(&NAMESPACE, &name)
}

/// The `completion-missing` event of a launch.
pub fn missing_event_id(launch_id: &Uuid) -> Uuid {
    derive(&[b"completion-missing", launch_id.as_bytes()])
}

/// The exception case a missing completion opens (type `completion_missing`).
pub fn missing_exception_id(launch_id: &Uuid) -> Uuid {
    derive(&[b"exception/completion-missing", launch_id.as_bytes()])
}

/// The exception case a failed recovery opens (type `recovery_failed`).
pub fn recovery_failed_exception_id(launch_id: &Uuid) -> Uuid {
    derive(&[b"exception/recovery-failed", launch_id.as_bytes()])
}

/// Whether an operator's `ignore` naming `launch_id` and `exception_id` is about that
/// launch's missing-completion case: it names one of the case's two exceptions, or the
/// launch alone. Recovery judges those ignores and the contact processor every other one;
/// both ask this, from the command alone, so exactly one of them audits each ignore.
pub fn ignore_targets_case(launch_id: Option<Uuid>, exception_id: Option<Uuid>) -> bool {
    match (launch_id, exception_id) {
        (Some(launch), Some(exception)) => {
            exception == missing_exception_id(&launch)
                || exception == recovery_failed_exception_id(&launch)
        }
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// One event of an exception case: `change` names what happened to it
/// (`open`, `resolved`, `ignored`, ...), so each change has its own id.
pub fn exception_event_id(exception_id: &Uuid, change: &str) -> Uuid {
    derive(&[
        b"exception-event",
        exception_id.as_bytes(),
        change.as_bytes(),
    ])
}

/// The `completion-resolved` event closing a launch's case.
pub fn resolved_event_id(launch_id: &Uuid) -> Uuid {
    derive(&[b"completion-resolved", launch_id.as_bytes()])
}

/// A delivery alert of a tenant, named by the bucket that raised it.
pub fn alert_id(tenant: &str, bucket_start_ms: i64) -> Uuid {
    derive(&[
        b"delivery-alert",
        tenant.as_bytes(),
        &bucket_start_ms.to_be_bytes(),
    ])
}

/// One change of an alert (`raised`, `resolved`).
pub fn alert_event_id(alert_id: &Uuid, change: &str) -> Uuid {
    derive(&[b"alert-event", alert_id.as_bytes(), change.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ignore_targets_a_case_by_its_exceptions_or_its_launch_alone() {
        let (launch, other) = (Uuid::from_u128(7), Uuid::from_u128(8));
        let missing = missing_exception_id(&launch);
        let failed = recovery_failed_exception_id(&launch);
        assert!(ignore_targets_case(Some(launch), Some(missing)));
        assert!(ignore_targets_case(Some(launch), Some(failed)));
        assert!(ignore_targets_case(Some(launch), None));
        assert!(!ignore_targets_case(Some(other), Some(missing)));
        assert!(!ignore_targets_case(Some(launch), Some(Uuid::from_u128(9))));
        assert!(!ignore_targets_case(None, Some(missing)));
        assert!(!ignore_targets_case(None, None));
    }

    #[test]
    fn ids_are_stable_and_distinct_per_purpose() {
        let launch = Uuid::from_u128(7);
        assert_eq!(missing_event_id(&launch), missing_event_id(&launch));
        let all = [
            missing_event_id(&launch),
            missing_exception_id(&launch),
            recovery_failed_exception_id(&launch),
            resolved_event_id(&launch),
            exception_event_id(&missing_exception_id(&launch), "open"),
            exception_event_id(&missing_exception_id(&launch), "resolved"),
        ];
        let mut unique = all.to_vec();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len());
        assert_ne!(alert_id("t1", 0), alert_id("t1", 600_000));
    }
}
