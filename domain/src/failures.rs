//! Every way work fails for good, and who answers for it.
//!
//! A permanent failure is one no retry fixes: a job, a lead, a record or a notification
//! that callstream gives up on. Each must open an exception an operator can act on (and
//! so reach the notifier). This registry is where they are declared: each kind names
//! the service that detects it ([`Owner`]); the exception type each opens is given by
//! `ExceptionType::from` in `callstream-schemas`, an exhaustive match. Every owner's
//! tests drive each of its kinds and fail when one opens no exception, and a kind added
//! here without a scenario there fails those tests.

use std::fmt;

/// The service that detects a failure and opens its exception.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    Contact,
    CompletionDetector,
    Scheduler,
    LaunchDispatcher,
    CrmDispatcher,
    Recovery,
    Notifier,
    Projections,
}

macro_rules! permanent_failures {
    ($( $(#[$doc:meta])* $kind:ident => ($owner:ident, $label:literal), )+) => {
        /// A permanent failure; see the module's documentation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum PermanentFailure {
            $( $(#[$doc])* $kind, )+
        }

        impl PermanentFailure {
            /// Every kind, in declaration order (made by the same macro as the enum, so
            /// it cannot miss one).
            pub const ALL: &'static [Self] = &[$(Self::$kind,)+];

            /// The service that detects it.
            pub fn owner(self) -> Owner {
                match self {
                    $(Self::$kind => Owner::$owner,)+
                }
            }

            /// A stable label (logs, counters, the exception's reason where no finer
            /// one is known).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$kind => $label,)+
                }
            }
        }
    };
}

permanent_failures! {
    /// The contact cannot be called at all (do not call, blocked, enrolled, spam) and
    /// its step ends failed.
    LeadBarred => (Contact, "lead_barred"),
    /// The contact has no phone number to call, and its step ends failed.
    NoPhoneNumber => (Contact, "no_phone_number"),
    /// No calling window opens for the lead within the move horizon at launch time.
    NoWindowOpening => (Contact, "no_window_opening"),
    /// A call's final result that the workflow cannot take: a second, different result
    /// for one call, or a result for a step that is already over.
    ResultRejected => (Contact, "result_rejected"),
    /// The platform failed to place the lead's calls more often than the policy allows.
    ProviderFailuresExhausted => (Contact, "provider_failures_exhausted"),
    /// No slot on the grid within the horizon for a planned call.
    NoSlot => (Scheduler, "no_slot"),
    /// The launch cannot be placed as asked (refused, expired, bad number).
    LaunchRefused => (LaunchDispatcher, "launch_refused"),
    /// The provider kept failing, or reconciliation could not tell whether a call was
    /// made.
    ProviderFailed => (LaunchDispatcher, "provider_failed"),
    /// A CRM write failed for good.
    CrmWriteFailed => (CrmDispatcher, "crm_write_failed"),
    /// A launched call whose completion never came.
    CompletionMissing => (CompletionDetector, "completion_missing"),
    /// Recovery gave up looking a missing completion up.
    RecoveryGaveUp => (Recovery, "recovery_gave_up"),
    /// A record, timer or effect result a processor parked on the dead-letter topic.
    DeadLettered => (Notifier, "dead_lettered"),
    /// A notification no channel would take.
    NotificationUndeliverable => (Notifier, "notification_undeliverable"),
    /// A record the projections could not apply to a view (Postgres refused its rows, or
    /// it is not a callstream event), and skipped.
    UnappliableRecord => (Projections, "unappliable_record"),
}

impl Owner {
    pub const ALL: [Owner; 8] = [
        Owner::Contact,
        Owner::CompletionDetector,
        Owner::Scheduler,
        Owner::LaunchDispatcher,
        Owner::CrmDispatcher,
        Owner::Recovery,
        Owner::Notifier,
        Owner::Projections,
    ];
}

impl PermanentFailure {
    /// The kinds `owner` detects.
    pub fn of(owner: Owner) -> impl Iterator<Item = PermanentFailure> {
        Self::ALL
            .iter()
            .copied()
            .filter(move |k| k.owner() == owner)
    }
}

impl fmt::Display for PermanentFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn labels_are_distinct_and_every_owner_declares_a_kind() {
        let labels: HashSet<_> = PermanentFailure::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(labels.len(), PermanentFailure::ALL.len());
        for owner in Owner::ALL {
            assert!(PermanentFailure::of(owner).next().is_some(), "{owner:?}");
        }
    }
}
