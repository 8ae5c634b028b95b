//! Deterministic ids: every id the scheduler makes is a UUIDv5 over what
//! caused it, so a replay (after an aborted transaction or a restore)
//! produces the same ids and downstream deduplication on them works.

use uuid::Uuid;

/// The scheduler's UUIDv5 namespace: fixed forever, stored ids depend on it.
pub const SCHEDULER_NAMESPACE: Uuid = Uuid::from_u128(0x6c1f_5d7e_2a3b_5c4d_9e8f_0a1b_2c3d_4e5f);

/// The id of a fact of `kind` caused by `cause` (`kind` keeps facts of one cause apart).
pub fn derived(kind: &str, cause: Uuid) -> Uuid {
    let mut seed = Vec::with_capacity(kind.len() + 17);
    seed.extend_from_slice(kind.as_bytes());
    seed.push(b'/');
    seed.extend_from_slice(cause.as_bytes());
    Uuid::new_v5(&SCHEDULER_NAMESPACE, &seed)
}

/// The id of a fact about a tenant's job (the tenant is part of it: job
/// ids are only promised unique within a tenant).
pub fn for_job(kind: &str, tenant: &str, job: Uuid) -> Uuid {
    Uuid::new_v5(&SCHEDULER_NAMESPACE, &job_seed(kind, tenant, job))
}

/// The id of a fact about a job's slot (a launch due at slot `slot`).
pub fn for_slot(kind: &str, tenant: &str, job: Uuid, slot: u64) -> Uuid {
    let mut seed = job_seed(kind, tenant, job);
    seed.extend_from_slice(&slot.to_be_bytes());
    Uuid::new_v5(&SCHEDULER_NAMESPACE, &seed)
}

fn job_seed(kind: &str, tenant: &str, job: Uuid) -> Vec<u8> {
    let mut seed = Vec::with_capacity(kind.len() + tenant.len() + 26);
    seed.extend_from_slice(kind.as_bytes());
    seed.push(b'/');
    seed.extend_from_slice(&(tenant.len() as u64).to_be_bytes());
    seed.extend_from_slice(tenant.as_bytes());
    seed.extend_from_slice(job.as_bytes());
    seed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_kept_apart_by_kind() {
        let cause = Uuid::from_u128(42);
        assert_eq!(derived("allocated", cause), derived("allocated", cause));
        assert_ne!(derived("allocated", cause), derived("exception", cause));
        assert_ne!(
            for_slot("launch_due", "t", cause, 1),
            for_slot("launch_due", "t", cause, 2)
        );
        // Tenants apart: job ids are only unique within a tenant.
        assert_ne!(
            for_slot("launch_due", "a", cause, 1),
            for_slot("launch_due", "b", cause, 1)
        );
        assert_ne!(for_job("case", "a", cause), for_job("case", "b", cause));
        assert_eq!(derived("allocated", cause).get_version_num(), 5);
    }
}
