//! The query parameters of the read routes, each bounded as the OpenAPI document states
//! (page sizes, enumerated filters, the cursor's shape), so that every request the document
//! allows is one the API accepts.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// The state of a job, as the jobs view keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Requested,
    Scheduled,
    Due,
    Dispatching,
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
    pub contact_id: Option<String>,
    /// Only this campaign's jobs.
    pub campaign_id: Option<String>,
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
    /// Page size, 1..=500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    #[param(pattern = "^[0-9]{1,16}_[0-9a-f]{32}$")]
    pub cursor: Option<String>,
}

/// A time range, required. A range whose `to` is not after its `from` is empty.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RangeQuery {
    /// Start (RFC 3339, inclusive).
    pub from: DateTime<Utc>,
    /// End (RFC 3339, exclusive).
    pub to: DateTime<Utc>,
}

/// The longest range of slots one answer covers.
pub(crate) const MAX_SLOT_RANGE: chrono::Duration = chrono::Duration::days(7);

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
