//! The processors' kit: what every processor shares, and nothing a single
//! processor owns.
//!
//! - [`calling_rules`]: a lead's state calling rules as the events carry them.
//! - [`control`]: the typed, read-only view of the compacted `control` topic
//!   (pauses, campaign and grid settings, shadow mode, the CRM write switch,
//!   the completion window), read as a global table through the runtime.
//!   Writing it is the `control` edge's job (`callstream control apply`).
//! - [`emit`]: an event as the record a processor emits (Avro value, event
//!   headers, the event id header).
//! - [`keys`]: the state key of per-contact state, tenant and contact
//!   together (contact ids collide across tenants).
//!
//! A processor crate depends on this crate, the runtime, the schemas and the
//! domain, never on another processor: what two of them must agree on lives
//! here or in `callstream_domain` (ids, rules).

pub mod calling_rules;
pub mod control;
pub mod emit;
pub mod keys;
