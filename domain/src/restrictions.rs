//! What bars a contact from being called, and who may lift it.
//!
//! A restriction (do-not-call, blocked number, enrolled student, spam) can
//! come from the CRM's record of the contact, from the lead in a call ("stop
//! calling me"), or from an operator. The rule callstream keeps for the
//! people it calls:
//!
//! - the CRM's flags add restrictions and lift only their own: a CRM record
//!   saying `do_not_call: false` never undoes a "stop" the lead said;
//! - what the lead or an operator set is sticky: only an explicit operator
//!   action (with a reason, audited by the caller) lifts it;
//! - state written before the source was kept reads as sticky: when in doubt,
//!   hold the call.
//!
//! Pure: the contact processor keeps one [`Restrictions`] per contact and
//! asks it.

use serde::{Deserialize, Deserializer, Serialize};

/// One kind of restriction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Restriction {
    Blocked,
    DoNotCall,
    Enrolled,
    Spam,
}

impl Restriction {
    /// Every kind, in the order [`Restrictions::barred_reason`] reports them.
    pub const ALL: [Restriction; 4] = [
        Restriction::Blocked,
        Restriction::DoNotCall,
        Restriction::Enrolled,
        Restriction::Spam,
    ];

    /// The reason code a call it bars is cancelled with.
    pub fn reason(self) -> &'static str {
        match self {
            Restriction::Blocked => "blocked_number",
            Restriction::DoNotCall => "do_not_call",
            Restriction::Enrolled => "enrolled_student",
            Restriction::Spam => "spam",
        }
    }
}

/// Who set a sticky restriction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StickySource {
    /// The lead, in a call (the analysis heard an opt-out).
    Lead,
    /// An operator.
    Operator,
    /// Set before callstream kept the source: treated as the lead's.
    Unknown,
}

/// One restriction's state: the CRM's flag and, apart from it, a sticky one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct RestrictionState {
    /// What the CRM's latest word on the flag was.
    pub crm: bool,
    /// Set by the lead or an operator; only an operator lifts it.
    pub sticky: Option<StickySource>,
}

impl RestrictionState {
    pub fn is_set(&self) -> bool {
        self.crm || self.sticky.is_some()
    }
}

// Stored state from before the source was kept holds a plain bool; `true`
// becomes sticky (the safe reading), `false` nothing.
impl<'de> Deserialize<'de> for RestrictionState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Legacy(bool),
            Current {
                #[serde(default)]
                crm: bool,
                #[serde(default)]
                sticky: Option<StickySource>,
            },
        }
        Ok(match Stored::deserialize(deserializer)? {
            Stored::Legacy(set) => RestrictionState {
                crm: false,
                sticky: set.then_some(StickySource::Unknown),
            },
            Stored::Current { crm, sticky } => RestrictionState { crm, sticky },
        })
    }
}

/// What a change did to the contact's restrictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The restriction is now in force and was not before.
    Added,
    /// It was in force and is no longer.
    Lifted,
    /// In force before and after, or neither.
    Unchanged,
}

/// Every restriction of one contact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Restrictions {
    pub do_not_call: RestrictionState,
    pub blocked: RestrictionState,
    pub enrolled: RestrictionState,
    pub spam: RestrictionState,
}

impl Restrictions {
    fn state(&self, r: Restriction) -> &RestrictionState {
        match r {
            Restriction::Blocked => &self.blocked,
            Restriction::DoNotCall => &self.do_not_call,
            Restriction::Enrolled => &self.enrolled,
            Restriction::Spam => &self.spam,
        }
    }

    fn state_mut(&mut self, r: Restriction) -> &mut RestrictionState {
        match r {
            Restriction::Blocked => &mut self.blocked,
            Restriction::DoNotCall => &mut self.do_not_call,
            Restriction::Enrolled => &mut self.enrolled,
            Restriction::Spam => &mut self.spam,
        }
    }

    fn change(&mut self, r: Restriction, f: impl FnOnce(&mut RestrictionState)) -> Change {
        let before = self.is_set(r);
        f(self.state_mut(r));
        match (before, self.is_set(r)) {
            (false, true) => Change::Added,
            (true, false) => Change::Lifted,
            _ => Change::Unchanged,
        }
    }

    /// Whether `r` is in force, whoever set it.
    pub fn is_set(&self, r: Restriction) -> bool {
        self.state(r).is_set()
    }

    /// Who set `r` stickily, if anyone did.
    pub fn sticky(&self, r: Restriction) -> Option<StickySource> {
        self.state(r).sticky
    }

    /// The CRM's word on `r`: it sets or clears the CRM's own flag, and a
    /// `false` never lifts what the lead or an operator set.
    pub fn from_crm(&mut self, r: Restriction, value: bool) -> Change {
        self.change(r, |s| s.crm = value)
    }

    /// The lead asked for `r` (an opt-out heard in a call).
    pub fn from_lead(&mut self, r: Restriction) -> Change {
        self.change(r, |s| {
            // An operator's mark stays the operator's (the lead agrees with it).
            if s.sticky.is_none() {
                s.sticky = Some(StickySource::Lead);
            }
        })
    }

    /// An operator set `r`.
    pub fn set_by_operator(&mut self, r: Restriction) -> Change {
        self.change(r, |s| s.sticky = Some(StickySource::Operator))
    }

    /// An operator lifted `r`, with a reason the caller audits: the sticky
    /// mark goes, whoever set it. The CRM's own flag is the CRM's to clear.
    pub fn lift_by_operator(&mut self, r: Restriction) -> Change {
        self.change(r, |s| s.sticky = None)
    }

    /// Why the contact may not be called at all, if it may not: the first
    /// restriction in force, in [`Restriction::ALL`]'s order.
    pub fn barred_reason(&self) -> Option<&'static str> {
        Restriction::ALL
            .into_iter()
            .find(|r| self.is_set(*r))
            .map(Restriction::reason)
    }
}

#[cfg(test)]
mod tests;
