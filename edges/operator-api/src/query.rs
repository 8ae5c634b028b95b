//! The query parameters of the read routes, each bounded as the OpenAPI document states
//! (page sizes, enumerated filters, the cursor's shape), so that every request the document
//! allows is one the API accepts.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;

/// The state of a job, as the jobs view keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Requested,
    Scheduled,
    Due,
    Dispatching,
    /// Held by a pause or a guard (the reason says which); re-planned when it lifts.
    Held,
    Launched,
    Ambiguous,
    Completed,
    Failed,
    Shadow,
    Refused,
    Cancelled,
    Replaced,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Requested => "requested",
            Self::Scheduled => "scheduled",
            Self::Due => "due",
            Self::Dispatching => "dispatching",
            Self::Held => "held",
            Self::Launched => "launched",
            Self::Ambiguous => "ambiguous",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Shadow => "shadow",
            Self::Refused => "refused",
            Self::Cancelled => "cancelled",
            Self::Replaced => "replaced",
        }
    }
}

/// Filters of `GET /v1/jobs`. A range whose `to` is not after its `from` is empty.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobsQuery {
    /// Only jobs in this state.
    #[param(inline)]
    pub state: Option<JobState>,
    /// Only this contact's jobs.
    #[param(
        max_length = 256,
        pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"
    )]
    pub contact_id: Option<String>,
    /// Only this campaign's jobs.
    #[param(
        max_length = 256,
        pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"
    )]
    pub campaign_id: Option<String>,
    /// Only jobs still to come: requested, scheduled, due or held (with `state`, both apply).
    pub active: Option<bool>,
    /// Only jobs planned at or after this time (RFC 3339).
    pub from: Option<DateTime<Utc>>,
    /// Only jobs planned before this time (RFC 3339).
    pub to: Option<DateTime<Utc>>,
    /// Page size, 1..=500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9]{1,16}_[0-9a-f]{32}$")]
    pub cursor: Option<String>,
}

/// Which exceptions to list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExceptionFilter {
    #[default]
    Open,
    Resolved,
    Ignored,
    All,
}

/// Filters of `GET /v1/exceptions`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExceptionsQuery {
    /// open (default), resolved, ignored or all.
    #[param(inline)]
    pub status: Option<ExceptionFilter>,
    /// Only exceptions of this type (`completion_missing`, `launch_failed`, ...).
    #[param(
        max_length = 256,
        pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"
    )]
    pub exception_type: Option<String>,
    /// Page size, 1..=500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9]{1,16}_[0-9a-f]{32}$")]
    pub cursor: Option<String>,
}

/// Filters of `GET /v1/audit`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this action (`control.system_pause`, `command.retry_now`, ...).
    #[param(
        max_length = 256,
        pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"
    )]
    pub action: Option<String>,
    /// Only actions on this kind of subject (`tenant`, `campaign`, `contact`, `job`, ...).
    #[param(
        max_length = 256,
        pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"
    )]
    pub subject_type: Option<String>,
    /// Only actions about this contact.
    #[param(
        max_length = 256,
        pattern = "^[A-Za-z0-9_:@+=~-]+(\\.[A-Za-z0-9_:@+=~-]+)*$"
    )]
    pub contact_id: Option<String>,
    /// Page size, 1..=500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9]{1,16}_[0-9a-f]{32}$")]
    pub cursor: Option<String>,
}

/// A time range, required and bounded (each route says how long a range it takes; a longer
/// one is 400). A range whose `to` is not after its `from` is empty.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RangeQuery {
    /// Start (RFC 3339, inclusive).
    pub from: DateTime<Utc>,
    /// End (RFC 3339, exclusive): at most 31 days after `from` for `/v1/delivery`, 7 days
    /// for `/v1/slots`; further is 400.
    pub to: DateTime<Utc>,
}

impl RangeQuery {
    /// The range, refused with 400 when `to` is more than `max` after `from`. The views
    /// are indexed by time, but a year of buckets or slots in one answer is a heavy query
    /// and a huge body; a client asks again from where the answer ended.
    pub fn within(
        &self,
        max: chrono::Duration,
    ) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
        if self.to.signed_duration_since(self.from) > max {
            return Err(ApiError::BadRequest(format!(
                "from and to are more than {} days apart: ask for at most {} days at a time",
                max.num_days(),
                max.num_days()
            )));
        }
        Ok((self.from, self.to))
    }
}

/// The longest range of slots one request may ask for (the grid has over a thousand
/// slots a day).
pub const MAX_SLOT_RANGE: chrono::Duration = chrono::Duration::days(7);

/// The longest range of delivery buckets one request may ask for (144 buckets a day).
pub const MAX_DELIVERY_RANGE: chrono::Duration = chrono::Duration::days(31);

/// Jobs still to come (`active=true`), as the partial index `jobs_active` is defined.
pub const ACTIVE_JOBS_PREDICATE: &str = " AND state IN ('requested', 'scheduled', 'due', 'held')";

/// Paging only.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page size, 1..=500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9]{1,16}_[0-9a-f]{32}$")]
    pub cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    /// The reads state these predicates as literals so that the planner can use the partial
    /// indexes the migrations define with them; the two must stay word for word the same.
    #[test]
    fn the_partial_indexes_are_defined_with_the_predicates_the_reads_state() {
        let active = include_str!("../../../migrations/20250101000006_jobs_active.sql");
        let predicate = super::ACTIVE_JOBS_PREDICATE.trim_start_matches(" AND ");
        assert!(active.contains(&format!("WHERE {predicate}")), "{active}");
        let lookups = include_str!("../../../migrations/20250101000010_recovery_lookups.sql");
        let action = callstream_schemas::AUDIT_RECOVERY_LOOKUP;
        assert!(
            lookups.contains(&format!("WHERE action = '{action}'")),
            "{lookups}"
        );
    }
}
