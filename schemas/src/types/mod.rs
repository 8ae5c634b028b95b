//! Rust types mirroring the `.avsc` files field for field, one struct a record.
//!
//! The schemas are the source of truth, and their `doc` attributes document every field; the
//! structs repeat only what a Rust reader needs. Field names, order and types match the schema
//! exactly (a test encodes random schema-generated values through each type and back), so the
//! serde derive is the whole mapping: timestamps are `DateTime<Utc>` at millisecond precision,
//! UUIDs are `uuid::Uuid`, `["null", T]` is `Option<T>`, Avro enums are Rust enums.

use std::fmt;

/// Defines a Rust enum mirroring an Avro enum whose last symbol is the schema's `default`,
/// `unknown`: a reader resolving data with a symbol it does not know gets `Unknown`, so
/// symbols can be added later without breaking consumers.
macro_rules! avro_enum {
    (
        $(#[$meta:meta])*
        $name:ident = $avro_name:literal {
            $( $(#[$vmeta:meta])* $variant:ident => $symbol:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $symbol)] $variant, )+
            /// A symbol this version does not know (the schema's default symbol).
            #[serde(rename = "unknown", other)]
            Unknown,
        }

        impl $name {
            /// Every variant, in schema symbol order.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)+ Self::Unknown];
            /// Full name of the Avro enum.
            pub const AVRO_NAME: &'static str = $avro_name;

            /// The Avro symbol.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $symbol,)+
                    Self::Unknown => "unknown",
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl crate::types::AvroEnum for $name {
            fn avro_name() -> &'static str {
                $avro_name
            }
            fn symbols() -> Vec<&'static str> {
                Self::ALL.iter().map(|v| v.as_str()).collect()
            }
        }
    };
}

mod call;
mod common;
mod completion;
mod contact;
mod contact_state;
mod control;
mod crm;
mod launch;
mod ops;
mod schedule;

pub use call::{CallAnalysis, CallEvent, CallEventSource, CallOutcome};
pub use common::{Actor, ActorKind, CallingWindow, JobOrigin, Timestamp, ZoneSource};
pub use completion::{CompletionMissing, CompletionResolved, MissingTrigger, Resolution};
pub use contact::{ContactCommand, ContactCommandKind, ContactDetails};
pub use contact_state::{CampaignAttempts, ContactJob, ContactState, JobState, WorkflowState};
pub use control::{
    CallingRules, CampaignSettings, CompletionSettings, ControlChange, ControlSetting,
    ControlValue, GridSettings, NotificationRoute, NotificationRoutes, QuietHours, RuleOverride,
    TenantCallingRule,
};
pub use crm::{CrmAction, CrmCommand, CrmResult, CrmResultStatus};
pub use launch::{CallLaunch, LaunchCommand, LaunchStatus};
pub use ops::{
    Alert, AlertKind, AlertStatus, AuditEvent, AuditResult, ExceptionEvent, ExceptionStatus,
    ExceptionType, Notification, NotificationSeverity, AUDIT_DEAD_LETTER_REPLAY,
    AUDIT_EXCEPTION_ASSIGN, AUDIT_RECOVERY_LOOKUP,
};
pub use schedule::{ScheduleEvent, ScheduleEventKind, ScheduleRequest, ScheduleRequestKind};

/// A Rust enum that mirrors an Avro enum; lets tests check the two agree.
pub trait AvroEnum: fmt::Debug + Copy + 'static {
    /// Full name of the Avro enum.
    fn avro_name() -> &'static str;
    /// Avro symbols of every variant, in order.
    fn symbols() -> Vec<&'static str>;
}

/// Names and symbols of every Avro enum the types use, for the consistency test.
pub fn all_enums() -> Vec<(&'static str, Vec<&'static str>)> {
    fn entry<E: AvroEnum>() -> (&'static str, Vec<&'static str>) {
        (E::avro_name(), E::symbols())
    }
    vec![
        entry::<ActorKind>(),
        entry::<JobOrigin>(),
        entry::<ZoneSource>(),
        entry::<CallEventSource>(),
        entry::<CallOutcome>(),
        entry::<ContactCommandKind>(),
        entry::<ScheduleRequestKind>(),
        entry::<ScheduleEventKind>(),
        entry::<LaunchStatus>(),
        entry::<MissingTrigger>(),
        entry::<Resolution>(),
        entry::<CrmAction>(),
        entry::<CrmResultStatus>(),
        entry::<ExceptionStatus>(),
        entry::<ExceptionType>(),
        entry::<ControlSetting>(),
        entry::<AlertKind>(),
        entry::<AlertStatus>(),
        entry::<AuditResult>(),
        entry::<NotificationSeverity>(),
        entry::<WorkflowState>(),
        entry::<JobState>(),
    ]
}
