//! Which call, if any, a launch placed: pure matching over the calls to the
//! launch's number since its first request, each with the launch ids its
//! status-callback requests carried.
//!
//! Twilio's call resource does not echo the `StatusCallback` URL; its Call
//! Events subresource lists the requests Twilio made to it, URL included,
//! and that URL's `launch_id` names the launch. A call that has made no
//! request yet cannot be attributed, so the answer is then "look again
//! later", never "not placed": only a window in which every call is known
//! to belong to other launches proves this one was never dialed.

use uuid::Uuid;

use super::LookupOutcome;

/// One call to the launch's number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub call_id: String,
    /// When the provider created it (ms since the epoch), if it says.
    pub created_ms: Option<i64>,
    pub status: Option<String>,
    /// Launch ids named by the call's callback requests; empty: none made yet.
    pub launch_ids: Vec<String>,
}

/// The verdict over `candidates` for `launch_id`, counting only calls
/// created at or after `since_ms` (a call with no creation time counts).
pub fn decide(launch_id: &Uuid, since_ms: i64, candidates: &[Candidate]) -> LookupOutcome {
    let wanted = launch_id.as_hyphenated().to_string();
    let relevant = candidates
        .iter()
        .filter(|c| c.created_ms.is_none_or(|t| t >= since_ms));
    let mut ours: Vec<&Candidate> = Vec::new();
    let mut unattributed = 0usize;
    for candidate in relevant {
        if candidate
            .launch_ids
            .iter()
            .any(|id| id.eq_ignore_ascii_case(&wanted))
        {
            ours.push(candidate);
        } else if candidate.launch_ids.is_empty() {
            unattributed += 1;
        }
    }
    // Earliest first: if a launch ever had two calls, the first is the one
    // its callbacks were attributed to first.
    ours.sort_by_key(|c| (c.created_ms, c.call_id.clone()));
    if let Some(found) = ours.first() {
        return LookupOutcome::Found {
            call_id: found.call_id.clone(),
            status: found.status.clone(),
        };
    }
    if unattributed > 0 {
        return LookupOutcome::Failed {
            reason: "unattributed".into(),
            detail: Some(format!(
                "{unattributed} call(s) to the number have made no callback yet"
            )),
        };
    }
    LookupOutcome::NotFound
}

/// The `launch_id` query parameter of a callback URL.
pub fn launch_id_of(url: &str) -> Option<String> {
    let (_, query) = url.split_once('?')?;
    let query = query.split('#').next().unwrap_or(query);
    form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "launch_id")
        .map(|(_, value)| value.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, created: i64, launches: &[&str]) -> Candidate {
        Candidate {
            call_id: id.into(),
            created_ms: Some(created),
            status: Some("queued".into()),
            launch_ids: launches.iter().map(|l| (*l).to_owned()).collect(),
        }
    }

    #[test]
    fn verdicts() {
        let me = Uuid::from_u128(1);
        let mine = me.to_string();
        let other = Uuid::from_u128(2).to_string();
        let found = |id: &str| LookupOutcome::Found {
            call_id: id.into(),
            status: Some("queued".into()),
        };
        let cases: Vec<(&str, Vec<Candidate>, LookupOutcome)> = vec![
            ("no calls at all", vec![], LookupOutcome::NotFound),
            (
                "only other launches' calls",
                vec![call("CA1", 100, &[&other])],
                LookupOutcome::NotFound,
            ),
            (
                "ours among others",
                vec![call("CA1", 100, &[&other]), call("CA2", 110, &[&mine])],
                found("CA2"),
            ),
            (
                "ours, upper case",
                vec![call("CA2", 110, &[&mine.to_uppercase()])],
                found("CA2"),
            ),
            (
                "two of ours: the earliest",
                vec![call("CA9", 120, &[&mine]), call("CA3", 105, &[&mine])],
                found("CA3"),
            ),
            (
                "ours before the window is not ours",
                vec![call("CA1", 10, &[&mine])],
                LookupOutcome::NotFound,
            ),
            (
                "an old silent call is not a candidate",
                vec![call("CA1", 10, &[])],
                LookupOutcome::NotFound,
            ),
            (
                "a silent call in the window: look again",
                vec![call("CA1", 100, &[&other]), call("CA2", 100, &[])],
                LookupOutcome::Failed {
                    reason: "unattributed".into(),
                    detail: Some("1 call(s) to the number have made no callback yet".into()),
                },
            ),
            (
                "ours wins over a silent one",
                vec![call("CA2", 100, &[]), call("CA3", 101, &[&mine])],
                found("CA3"),
            ),
        ];
        for (name, candidates, expected) in cases {
            assert_eq!(decide(&me, 50, &candidates), expected, "{name}");
        }
    }

    #[test]
    fn launch_ids_come_from_the_callback_query() {
        let cases = [
            (
                "https://gw/v1/webhooks/twilio/i?contact_id=c&launch_id=abc&tenant=t",
                Some("abc"),
            ),
            (
                "https://gw/v1/webhooks/twilio/i?launch_id=a%2Db#frag",
                Some("a-b"),
            ),
            ("https://gw/v1/webhooks/twilio/i?contact_id=c", None),
            ("https://gw/v1/webhooks/twilio/i", None),
        ];
        for (url, expected) in cases {
            assert_eq!(launch_id_of(url).as_deref(), expected, "{url}");
        }
    }
}
