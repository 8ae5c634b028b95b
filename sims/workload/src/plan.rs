//! The contacts and their launch requests, decided up front from a seed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// Where leads live: a NANP area code (the zone comes from the number) or
/// an explicit zone (leads abroad, whose CRM record names it).
const PLACES: &[(&str, Option<&str>, u32)] = &[
    ("212", None, 14),                     // New York
    ("312", None, 14),                     // Chicago
    ("303", None, 8),                      // Denver
    ("602", None, 6),                      // Phoenix (no DST)
    ("213", None, 14),                     // Los Angeles
    ("907", None, 2),                      // Alaska
    ("808", None, 4),                      // Hawaii
    ("415", Some("Europe/London"), 10),    // a lead abroad, zone on the record
    ("646", Some("Asia/Kolkata"), 10),     // another
    ("917", Some("Australia/Sydney"), 8),  // and another
    ("305", Some("America/New_York"), 10), // Miami: Florida's hours and 3-in-24h cap
    // States with calling rules beyond the federal floor (domain/data/calling_rules.txt).
    ("502", None, 4), // Louisville: Kentucky, no calls before 10:00
    ("205", None, 3), // Birmingham: Alabama
    ("504", None, 3), // New Orleans: Louisiana
    ("410", None, 3), // Baltimore: Maryland, 08:00-20:00 and a cap
    ("405", None, 3), // Oklahoma City: Oklahoma, 08:00-20:00 and a cap
    ("215", None, 3), // Philadelphia: Pennsylvania
];

/// Every this many contacts, a US lead's CRM record names Kentucky whatever its area code
/// says: both states' rules apply.
const RECORD_SAYS_KENTUCKY_EVERY: usize = 25;

#[derive(Debug, Clone, Serialize)]
pub struct ContactRecord {
    pub phone_number: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// The US state on the CRM record (the first source of the state calling rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    pub do_not_call: bool,
    pub blocked: bool,
    pub enrolled_student: bool,
    pub spam: bool,
}

/// One launch request, as the gateway's intake takes it.
#[derive(Debug, Clone, Serialize)]
pub struct Launch {
    /// Whose CRM sends it (the token it is sent with says so; not in the body).
    #[serde(skip)]
    pub tenant: String,
    /// When the CRM sends it, in business time (ms since the epoch; 0: at once).
    #[serde(skip)]
    pub send_at_ms: i64,
    pub request_id: String,
    pub contact_id: String,
    pub campaign_id: String,
    pub reason: String,
    pub contact: ContactRecord,
}

#[derive(Debug, Clone)]
pub struct PlanSettings {
    pub contacts: usize,
    pub campaigns: Vec<String>,
    /// The tenants whose CRMs send, in turn (one contact each). The first two number their
    /// contacts alike, so they share contact ids, as two schools' CRMs would; the others
    /// prefix theirs with the tenant. Empty: one tenant, `default`.
    pub tenants: Vec<String>,
    pub id_prefix: String,
    pub seed: u64,
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub launches: Vec<Launch>,
}

fn weighted_place(rng: &mut StdRng) -> (&'static str, Option<&'static str>) {
    let total: u32 = PLACES.iter().map(|p| p.2).sum();
    let mut pick = rng.random_range(0..total);
    for (area, zone, weight) in PLACES {
        if pick < *weight {
            return (area, *zone);
        }
        pick -= weight;
    }
    (PLACES[0].0, PLACES[0].1)
}

/// The workload for `settings`; the same settings give the same plan.
pub fn plan(settings: &PlanSettings) -> Plan {
    let mut rng = StdRng::seed_from_u64(settings.seed);
    let campaigns = if settings.campaigns.is_empty() {
        vec!["default".to_string()]
    } else {
        settings.campaigns.clone()
    };
    let tenants = if settings.tenants.is_empty() {
        vec!["default".to_string()]
    } else {
        settings.tenants.clone()
    };
    let launches = (0..settings.contacts)
        .map(|n| {
            let (area, zone) = weighted_place(&mut rng);
            // 555-01xx numbers are reserved for fiction.
            let flag = rng.random_range(0..100);
            let phone_number = if flag == 4 {
                // One lead in a hundred has a number the platform refuses for good (Twilio's
                // magic invalid number): its launch fails and opens an exception.
                "+15005550001".to_string()
            } else {
                format!("+1{area}55501{:02}", n % 100)
            };
            let which = n % tenants.len();
            let tenant = tenants[which].clone();
            // With one tenant, contact n is `c-n` as it always was.
            let k = n / tenants.len();
            let contact_id = if which < 2 {
                format!("{}-c-{k}", settings.id_prefix)
            } else {
                format!("{}-{tenant}-c-{k}", settings.id_prefix)
            };
            Launch {
                tenant,
                send_at_ms: 0,
                request_id: format!("{}-req-{n}", settings.id_prefix),
                contact_id,
                campaign_id: campaigns[n % campaigns.len()].clone(),
                reason: "entered campaign".into(),
                contact: ContactRecord {
                    phone_number,
                    time_zone: zone.map(str::to_string),
                    state: match area {
                        "305" => Some("FL".into()),
                        _ if zone.is_none() && n % RECORD_SAYS_KENTUCKY_EVERY == 7 => {
                            Some("KY".into())
                        }
                        _ => None,
                    },
                    do_not_call: flag == 0,
                    blocked: flag == 1,
                    enrolled_student: flag == 2,
                    spam: flag == 3,
                },
            }
        })
        .collect();
    Plan { launches }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(seed: u64) -> PlanSettings {
        PlanSettings {
            contacts: 2_000,
            campaigns: vec!["a".into(), "b".into()],
            tenants: Vec::new(),
            id_prefix: "t".into(),
            seed,
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_plan() {
        let first = plan(&settings(1));
        let again = plan(&settings(1));
        let phones = |p: &Plan| {
            p.launches
                .iter()
                .map(|l| l.contact.phone_number.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(phones(&first), phones(&again));
        assert_ne!(phones(&first), phones(&plan(&settings(2))));
    }

    #[test]
    fn contacts_spread_over_campaigns_zones_and_flags() {
        let plan = plan(&settings(3));
        assert_eq!(plan.launches.len(), 2_000);
        let abroad = plan
            .launches
            .iter()
            .filter(|l| l.contact.time_zone.is_some())
            .count();
        let flagged = plan
            .launches
            .iter()
            .filter(|l| {
                l.contact.do_not_call
                    || l.contact.blocked
                    || l.contact.enrolled_student
                    || l.contact.spam
            })
            .count();
        assert!(abroad > 200 && abroad < 1_000, "{abroad}");
        assert!(flagged > 20 && flagged < 200, "{flagged}");
        assert!(plan
            .launches
            .iter()
            .all(|l| l.contact.phone_number.len() == 12));
        let in_a = plan
            .launches
            .iter()
            .filter(|l| l.campaign_id == "a")
            .count();
        assert_eq!(in_a, 1_000);
    }

    #[test]
    fn the_first_two_tenants_share_contact_ids_and_the_third_has_its_own() {
        let plan = plan(&PlanSettings {
            tenants: vec!["acme".into(), "bolt".into(), "crest".into()],
            ..settings(4)
        });
        let ids = |tenant: &str| -> std::collections::BTreeSet<String> {
            plan.launches
                .iter()
                .filter(|l| l.tenant == tenant)
                .map(|l| l.contact_id.clone())
                .collect()
        };
        let (acme, bolt, crest) = (ids("acme"), ids("bolt"), ids("crest"));
        assert_eq!(acme.len() + bolt.len() + crest.len(), 2_000);
        assert!(bolt.is_subset(&acme), "the two schools share contact ids");
        assert!(crest.is_disjoint(&acme));
        let requests: std::collections::BTreeSet<_> =
            plan.launches.iter().map(|l| &l.request_id).collect();
        assert_eq!(requests.len(), 2_000, "request ids stay unique");
    }
}
