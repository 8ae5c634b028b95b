//! Postgres projections of the event log, exactly once, rebuildable.
//!
//! The views (see [`View`]) are tables in Postgres built only from the topics: jobs with
//! lineage, exceptions, slot bookings, launches and delivery per 10-minute bucket, audit,
//! the contact timeline, the control settings and operator commands. [`run`] keeps them
//! up to date; [`rebuild`] rebuilds any of them from offset 0 and swaps it in.
//!
//! Guarantees:
//! - Exactly once into Postgres: records are read with `read_committed` from an explicit
//!   assignment (no consumer group, no Kafka commits), and each view's rows of a batch and
//!   its consumed offsets are written in one transaction (the views are committed in a few
//!   concurrent lanes, see `commit`); on start the consumer seeks to the stored offsets.
//!   The row changes are idempotent and order-independent all the same.
//! - Records that are not events, and records Postgres refuses for a reason retrying
//!   cannot fix, are counted, logged, skipped, and each opens an `unappliable_record`
//!   exception before its offset is stored (see `report`); none stops a projection.
//! - Postgres going away pauses the projections, which resume and catch up on its return.
//! - A rebuilt view equals the live one, and stays queryable while it is rebuilt.
//!
//! ```no_run
//! # async fn example() -> Result<(), callstream_projections::ProjectionError> {
//! use callstream_projections::{run, ProjectionsConfig};
//! let config = ProjectionsConfig::from_env()?;
//! run(config, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```

mod apply;
mod commit;
pub mod config;
pub mod error;
pub mod rebuild;
pub mod report;
pub mod roles;
pub mod runner;
pub mod source;
pub mod store;
pub mod telemetry;
pub mod view;

pub use config::{parse_views, ProjectionsConfig};
pub use error::{is_transient, ProjectionError};
pub use rebuild::{rebuild, RebuildReport};
pub use runner::{lazy_pool, migrate, migrate_if_behind, run, run_with_stats, run_with_telemetry};
pub use store::Stats;
pub use telemetry::Telemetry;
pub use view::{Tables, UnknownView, View};
