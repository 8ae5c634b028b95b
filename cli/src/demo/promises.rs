//! The promises to the people called, checked from what the voice simulator
//! recorded (every call it was asked to create, when, for whom, in which
//! campaign, and what the lead said), never from callstream's own counters:
//!
//! - `no_call_to_opted_out_lead`: no call to a lead after the call in which
//!   they said "stop" ended (when the platform delivered that call's result);
//! - `no_call_while_paused`: no call of a paused campaign while the pause
//!   was on (from a second after the pause was written: `control` reaches
//!   the dispatcher within that);
//! - `cap_held_by_send_time`: creates per tenant in any window of five slots
//!   at most five slots' launches plus one slot's (timing jitter);
//! - `no_call_outside_window`: every call inside the campaign's window and
//!   federal hours, in every candidate zone of the lead (resolved as the
//!   contact processor resolves it: contact record, area code, tenant default);
//! - `no_call_against_state_rules`: every call allowed by the state calling
//!   rules of the lead's states (the CRM record's state, else the area code's;
//!   both when they disagree), read in the lead's local time: state hours and
//!   holidays at the moment of the create, and no call beyond a state's
//!   frequency cap over the calls created before it to the same number (by
//!   any contact of the tenant) within the tenant's cap subject;
//! - `no_contact_stuck`: no contact left in `dispatching` (from the last
//!   `contact-state` of each contact).
//!
//! Each check says how many it looked at, how many broke it, and up to five
//! examples.

use std::collections::{BTreeMap, HashMap, HashSet};

use callstream_control::ControlFile;
use callstream_domain::calling_rules::{resolve_jurisdictions, JurisdictionInputs};
use callstream_domain::timezone::{resolve_zone, ResolvedZone, ZoneInputs};
use callstream_domain::Availability;
use callstream_kit::calling_rules::{LeadRules, TenantCallingRules};
use callstream_kit::control::settings::window_from_wire;
use chrono::DateTime;
use serde::Serialize;
use serde_json::Value;

use super::tally::Tally;

/// A pause of a campaign during the run, as the demo wrote it.
#[derive(Debug, Clone)]
pub struct PauseWindow {
    pub campaign: String,
    pub from_ms: i64,
    pub to_ms: i64,
}

/// The campaign name of a pause that covers every campaign (a system pause).
pub const EVERY_CAMPAIGN: &str = "*";

/// How long (real time) `control` may take to reach the dispatcher once written.
const PAUSE_PROPAGATION_MS: i64 = 1_000;

/// [`PAUSE_PROPAGATION_MS`] in business time: longer on a scaled clock.
fn pause_propagation_ms() -> i64 {
    let rate = callstream_platform::clock::process_clock().rate();
    (PAUSE_PROPAGATION_MS as f64 * rate.max(1.0)) as i64
}

/// One promise, checked.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Check {
    pub checked: usize,
    pub broken: usize,
    pub examples: Vec<String>,
}

impl Check {
    pub(super) fn saw(&mut self) {
        self.checked += 1;
    }

    pub(super) fn broke(&mut self, example: impl FnOnce() -> String) {
        self.broken += 1;
        if self.examples.len() < 5 {
            self.examples.push(example());
        }
    }

    pub fn ok(&self) -> bool {
        self.broken == 0
    }
}

/// Every promise of the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Promises {
    pub no_call_to_opted_out_lead: Check,
    pub no_call_while_paused: Check,
    pub cap_held_by_send_time: Check,
    pub no_call_outside_window: Check,
    pub no_call_against_state_rules: Check,
    pub no_contact_stuck: Check,
}

/// One call as the simulator recorded it.
#[derive(Debug, Clone)]
struct Call {
    contact: String,
    tenant: String,
    campaign: String,
    to: String,
    created_ms: i64,
    ended_ms: Option<i64>,
    opted_out: bool,
    result_delivered: bool,
}

fn calls(sim_calls: &Value, default_tenant: &str) -> Vec<Call> {
    let text = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut calls: Vec<Call> = sim_calls
        .get("calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some(Call {
                contact: text(c, "contact_id")?,
                tenant: text(c, "tenant").unwrap_or_else(|| default_tenant.to_owned()),
                campaign: text(c, "campaign_id").unwrap_or_default(),
                to: text(c, "to").unwrap_or_default(),
                created_ms: c.get("created_at_ms").and_then(Value::as_i64)?,
                ended_ms: c.get("ended_at_ms").and_then(Value::as_i64),
                opted_out: text(c, "intent").as_deref() == Some("do_not_call"),
                result_delivered: c.get("completion_dropped").and_then(Value::as_bool)
                    == Some(false),
            })
        })
        .collect();
    calls.sort_by_key(|c| c.created_ms);
    calls
}

fn at(ms: i64) -> String {
    if ms == i64::MAX {
        // A pause never lifted during the run.
        return "the end of the run".into();
    }
    DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%H:%M:%S%.3fZ").to_string())
        .unwrap_or_default()
}

/// What the CRM record of a contact the workload named says of where it is.
#[derive(Debug, Clone, Default)]
pub struct LeadRecord {
    pub zone: Option<String>,
    pub state: Option<String>,
}

/// The record of each contact the workload named, by tenant and contact: two tenants'
/// contacts with one id are different people.
pub type ContactZones = HashMap<(String, String), LeadRecord>;

/// Checks every promise.
pub fn check(
    sim_calls: &Value,
    control: &ControlFile,
    pauses: &[PauseWindow],
    zones: &ContactZones,
    tally: &Tally,
) -> Promises {
    let default_tenant = control.tenants.keys().next().cloned().unwrap_or_default();
    let calls = calls(sim_calls, &default_tenant);
    Promises {
        no_call_to_opted_out_lead: opted_out(&calls),
        no_call_while_paused: paused(&calls, pauses),
        cap_held_by_send_time: cap(&calls, control),
        no_call_outside_window: windows(&calls, control, zones),
        no_call_against_state_rules: state_rules(&calls, control, zones),
        no_contact_stuck: stuck(tally),
    }
}

/// When each lead's first "stop" reached callstream's side, by tenant and contact: the end
/// of the call in which they said it, when the platform delivered that call's result.
fn stops(calls: &[Call]) -> HashMap<(&str, &str), i64> {
    let mut stopped: HashMap<(&str, &str), i64> = HashMap::new();
    for c in calls.iter().filter(|c| c.opted_out && c.result_delivered) {
        if let Some(end) = c.ended_ms {
            let at = stopped.entry((&c.tenant, &c.contact)).or_insert(end);
            *at = (*at).min(end);
        }
    }
    stopped
}

/// The leads (tenant, contact) who said "stop" in a call whose result the platform
/// delivered, from the simulator's `/_sim/calls`.
pub fn stopped_leads(sim_calls: &Value, default_tenant: &str) -> HashSet<(String, String)> {
    stops(&calls(sim_calls, default_tenant))
        .into_keys()
        .map(|(tenant, contact)| (tenant.to_owned(), contact.to_owned()))
        .collect()
}

fn opted_out(calls: &[Call]) -> Check {
    let mut check = Check::default();
    let stopped = stops(calls);
    for c in calls {
        check.saw();
        if let Some(stop) = stopped.get(&(c.tenant.as_str(), c.contact.as_str())) {
            if c.created_ms > *stop {
                check.broke(|| {
                    format!(
                        "{}/{} called at {} after saying stop at {}",
                        c.tenant,
                        c.contact,
                        at(c.created_ms),
                        at(*stop)
                    )
                });
            }
        }
    }
    check
}

fn paused(calls: &[Call], pauses: &[PauseWindow]) -> Check {
    let mut check = Check::default();
    for c in calls {
        check.saw();
        let covered = pauses.iter().find(|p| {
            (p.campaign == c.campaign || p.campaign == EVERY_CAMPAIGN)
                && c.created_ms > p.from_ms + pause_propagation_ms()
                && c.created_ms < p.to_ms
        });
        if let Some(p) = covered {
            check.broke(|| {
                format!(
                    "{}/{} called at {} while {} was paused ({} to {})",
                    c.tenant,
                    c.contact,
                    at(c.created_ms),
                    p.campaign,
                    at(p.from_ms),
                    at(p.to_ms)
                )
            });
        }
    }
    check
}

fn cap(calls: &[Call], control: &ControlFile) -> Check {
    let mut check = Check::default();
    let mut by_tenant: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for c in calls {
        by_tenant.entry(&c.tenant).or_default().push(c.created_ms);
    }
    for (tenant, times) in by_tenant {
        let grid = control
            .tenants
            .get(tenant)
            .and_then(|t| t.grid.as_ref())
            .map_or((75, 1), |g| {
                (i64::from(g.slot_seconds), i64::from(g.launches_per_slot))
            });
        let (slot_ms, per_slot) = (grid.0.max(1) * 1_000, grid.1.max(1));
        let window_ms = 5 * slot_ms;
        let allowed = usize::try_from(6 * per_slot).unwrap_or(usize::MAX);
        let mut lo = 0;
        for (hi, t) in times.iter().enumerate() {
            check.saw();
            while times[lo] <= t - window_ms {
                lo += 1;
            }
            let count = hi + 1 - lo;
            if count > allowed {
                check.broke(|| {
                    format!(
                        "{tenant}: {count} creates in the {window_ms} ms before {} (at most {allowed})",
                        at(*t)
                    )
                });
            }
        }
    }
    check
}

fn windows(calls: &[Call], control: &ControlFile, zones: &ContactZones) -> Check {
    let mut check = Check::default();
    for c in calls {
        check.saw();
        let Some(tenant) = control.tenants.get(&c.tenant) else {
            continue;
        };
        let settings = tenant
            .campaigns
            .get(&c.campaign)
            .map(|f| &f.settings)
            .or(tenant.campaign_defaults.as_ref());
        let campaign_window = match settings.map(|s| window_from_wire(&s.windows)) {
            Some(Ok(w)) => w,
            // No window of its own: the built-in one (federal hours bound it anyway).
            _ => callstream_kit::control::CampaignConfig::builtin().window,
        };
        let Some(zone) = lead_zone(c, control, zones) else {
            continue;
        };
        let Ok(window) = campaign_window.for_lead(&zone) else {
            continue;
        };
        let Some(when) = DateTime::from_timestamp_millis(c.created_ms) else {
            continue;
        };
        if !window.is_allowed(when) {
            check.broke(|| {
                let local: Vec<String> = zone
                    .zones
                    .iter()
                    .map(|z| format!("{} {}", when.with_timezone(z).format("%a %H:%M"), z.name()))
                    .collect();
                format!(
                    "{}/{} called at {} ({}), outside {}'s window",
                    c.tenant,
                    c.contact,
                    at(c.created_ms),
                    local.join(", "),
                    c.campaign
                )
            });
        }
    }
    check
}

/// The lead's zone(s) as the contact processor resolves them: record, area code, tenant
/// default.
fn lead_zone(c: &Call, control: &ControlFile, zones: &ContactZones) -> Option<ResolvedZone> {
    let record = zones.get(&(c.tenant.clone(), c.contact.clone()));
    let default = control
        .tenants
        .get(&c.tenant)
        .and_then(|t| t.grid.as_ref())
        .map(|g| g.default_time_zone.clone());
    resolve_zone(&ZoneInputs {
        contact_zone: record.and_then(|r| r.zone.as_deref()),
        platform_zone: None,
        phone: Some(&c.to),
        tenant_default: default.as_deref(),
    })
    .ok()
}

/// Each call against the state rules of the lead's states (and its tenant's own rules and
/// overrides, from the control file), in its zone(s), with the calls created before it to
/// the same number (whichever contact of the tenant they were for: the workload shares
/// numbers between contacts) within the tenant's cap subject as what the caps count.
fn state_rules(calls: &[Call], control: &ControlFile, zones: &ContactZones) -> Check {
    let mut check = Check::default();
    // As the processors read them: the campaign's calling rules, else the tenant's.
    let usable = |w: Option<&callstream_schemas::CallingRules>| {
        w.and_then(|w| TenantCallingRules::from_wire(w).ok())
    };
    let mut rules_of: HashMap<(&str, &str), TenantCallingRules> = HashMap::new();
    for c in calls {
        let tenant = control.tenants.get(&c.tenant);
        let campaign = tenant.and_then(|t| t.campaigns.get(&c.campaign));
        let rules = usable(campaign.and_then(|c| c.calling_rules.as_ref()))
            .or_else(|| usable(tenant.and_then(|t| t.calling_rules.as_ref())))
            .unwrap_or_default();
        rules_of.insert((&c.tenant, &c.campaign), rules);
    }
    let statutory = TenantCallingRules::default();
    let mut before: HashMap<(String, &str), Vec<DateTime<chrono::Utc>>> = HashMap::new();
    for c in calls {
        check.saw();
        let Some(when) = DateTime::from_timestamp_millis(c.created_ms) else {
            continue;
        };
        let tenant = rules_of
            .get(&(c.tenant.as_str(), c.campaign.as_str()))
            .unwrap_or(&statutory);
        let subject = tenant.cap_subject.key(&c.campaign);
        let person = callstream_kit::keys::phone_key(&c.tenant, &c.to);
        let placed = before.entry((person, subject)).or_default();
        let record = zones.get(&(c.tenant.clone(), c.contact.clone()));
        let states = resolve_jurisdictions(&JurisdictionInputs {
            contact_state: record.and_then(|r| r.state.as_deref()),
            phone: Some(&c.to),
            tenant_default: tenant.default_state.as_deref(),
        });
        let rules = match (states, lead_zone(c, control, zones)) {
            (Ok(states), Some(zone)) => {
                let (states, _) = callstream_kit::calling_rules::to_wire(&states);
                LeadRules::from_wire(&states, &zone.zones, placed, &tenant.rules)
            }
            _ => None,
        };
        if let Some(violation) = rules.and_then(|r| r.violation(when)) {
            let local = lead_zone(c, control, zones)
                .map(|z| {
                    when.with_timezone(&z.primary())
                        .format("%a %H:%M %Z")
                        .to_string()
                })
                .unwrap_or_default();
            check.broke(|| {
                format!(
                    "{}/{} called at {} ({local}): {violation}",
                    c.tenant,
                    c.contact,
                    at(c.created_ms)
                )
            });
        }
        placed.push(when);
    }
    check
}

fn stuck(tally: &Tally) -> Check {
    let mut check = Check::default();
    for ((tenant, contact), state) in &tally.workflows {
        check.saw();
        if *state == callstream_schemas::WorkflowState::Dispatching {
            check.broke(|| format!("{tenant}/{contact} still dispatching"));
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sim(calls: Vec<Value>) -> Value {
        json!({ "calls": calls })
    }

    fn call(contact: &str, created: i64, ended: Option<i64>, intent: Option<&str>) -> Value {
        json!({
            "contact_id": contact, "tenant": "acme", "campaign_id": "spring",
            "to": "+13125550100", "created_at_ms": created, "ended_at_ms": ended,
            "intent": intent, "completion_dropped": false,
        })
    }

    #[test]
    fn a_call_after_the_lead_said_stop_breaks_the_promise() {
        let calls = calls(
            &sim(vec![
                call("c1", 1_000, Some(5_000), Some("do_not_call")),
                call("c1", 9_000, None, None),
                call("c2", 2_000, None, None),
            ]),
            "acme",
        );
        let check = opted_out(&calls);
        assert_eq!((check.checked, check.broken), (3, 1));
        assert!(check.examples[0].contains("acme/c1"));
    }

    #[test]
    fn a_call_of_a_paused_campaign_breaks_the_promise_after_propagation() {
        let calls = calls(
            &sim(vec![
                call("c1", 10_500, None, None),
                call("c2", 12_000, None, None),
                call("c3", 30_000, None, None),
            ]),
            "acme",
        );
        let pause = PauseWindow {
            campaign: "spring".into(),
            from_ms: 10_000,
            to_ms: 20_000,
        };
        let check = paused(&calls, &[pause]);
        assert_eq!((check.checked, check.broken), (3, 1));
        assert!(check.examples[0].contains("acme/c2"));
    }

    #[test]
    fn more_than_six_slots_of_creates_in_five_slots_breaks_the_cap() {
        let file = ControlFile::parse(
            "[tenants.acme]\n[tenants.acme.grid]\nslot_seconds = 1\nlaunches_per_slot = 1\ndefault_time_zone = \"America/Chicago\"\n",
        )
        .unwrap();
        let times = |n: i64, every: i64| (0..n).map(|i| call("c", i * every, None, None)).collect();
        let paced = calls(&sim(times(20, 1_000)), "acme");
        assert!(cap(&paced, &file).ok());
        let burst = calls(&sim(times(7, 100)), "acme");
        let check = cap(&burst, &file);
        assert_eq!(check.broken, 1, "{check:?}");
    }

    #[test]
    fn a_call_against_a_state_rule_breaks_the_promise() {
        let file = ControlFile::parse(
            "[tenants.acme]\n[tenants.acme.grid]\nslot_seconds = 75\nlaunches_per_slot = 1\ndefault_time_zone = \"America/Chicago\"\n",
        )
        .unwrap();
        // Thursday 4 June 2026 in Louisville (EDT, UTC-4): Kentucky allows calls from 10:00.
        let ky = |contact: &str, hour: i64| {
            let mut c = call(contact, (1_780_545_600 + hour * 3_600) * 1_000, None, None);
            c["to"] = json!("+15025550101");
            c
        };
        let miami = |contact: &str, hour: i64| {
            let mut c = call(contact, (1_780_545_600 + hour * 3_600) * 1_000, None, None);
            c["to"] = json!("+13055550101");
            c
        };
        let checked = calls(
            &sim(vec![
                ky("early", 9),
                ky("late", 11),
                // Two contacts share the number: the cap counts the number's calls.
                miami("fl", 10),
                miami("fl", 11),
                miami("fl-again", 12),
                miami("fl-again", 13),
            ]),
            "acme",
        );
        let check = state_rules(&checked, &file, &ContactZones::new());
        assert_eq!((check.checked, check.broken), (6, 2), "{check:?}");
        assert!(
            check.examples[0].contains("acme/early")
                && check.examples[0].contains("state_hours:KY")
        );
        assert!(
            check.examples[1].contains("acme/fl-again")
                && check.examples[1].contains("frequency_cap:FL:3_per_24h")
        );
    }
}
