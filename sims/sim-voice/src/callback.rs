//! The `StatusCallback` URL and the status callbacks posted to it.
//!
//! The launch puts its contact and launch ids in the callback URL's query
//! (`?contact_id=..&launch_id=..&tenant=..&campaign_id=..`); Twilio signs the
//! full URL, so they come back trusted. The simulator reads them too: to
//! count calls per launch id and to say which contact an analysis is about.
//!
//! The parameters are Twilio's: `AccountSid`, `ApiVersion`, `CallSid`,
//! `CallStatus`, `Called`, `Caller`, `Direction`, `From`, `To`, `Timestamp`
//! (RFC 2822), `SequenceNumber`, `CallbackSource=call-progress-events`,
//! `AnsweredBy` once answered with machine detection on, and on the final
//! status `CallDuration`, `Duration` (minutes, rounded up) and
//! `SipResponseCode`.

use chrono::{DateTime, Utc};

use crate::plan::CallStatus;

/// Checks that `url` is an absolute http(s) URL with a host.
pub fn check_url(url: &str) -> Result<reqwest::Url, &'static str> {
    let parsed = reqwest::Url::parse(url).map_err(|_| "not an absolute URL")?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("scheme must be http or https");
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("no host");
    }
    Ok(parsed)
}

/// A call's `StatusCallback`, with the ids its query carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackTarget {
    /// Exactly as the client gave it: this string is what gets signed.
    pub url: String,
    pub launch_id: Option<String>,
    pub contact_id: Option<String>,
    pub tenant: Option<String>,
    pub campaign_id: Option<String>,
}

impl CallbackTarget {
    pub fn parse(url: &str) -> Result<Self, &'static str> {
        let parsed = check_url(url)?;
        let mut target = CallbackTarget {
            url: url.to_string(),
            launch_id: None,
            contact_id: None,
            tenant: None,
            campaign_id: None,
        };
        for (name, value) in parsed.query_pairs() {
            let slot = match name.as_ref() {
                "launch_id" => &mut target.launch_id,
                "contact_id" => &mut target.contact_id,
                "tenant" => &mut target.tenant,
                "campaign_id" => &mut target.campaign_id,
                _ => continue,
            };
            if slot.is_none() && !value.is_empty() {
                *slot = Some(value.into_owned());
            }
        }
        Ok(target)
    }
}

/// What every callback of a call repeats.
#[derive(Debug, Clone)]
pub struct CallFacts {
    pub sid: String,
    pub account_sid: String,
    pub to: String,
    pub from: String,
    pub target: Option<CallbackTarget>,
    pub created_at: DateTime<Utc>,
}

/// One status callback's parameters.
pub struct StatusReport<'a> {
    pub status: CallStatus,
    pub sequence: u32,
    pub at: DateTime<Utc>,
    /// `AnsweredBy`, sent from the answer on.
    pub answered_by: Option<&'a str>,
    /// Talk time, sent with the final status.
    pub duration_secs: u32,
}

/// The SIP response Twilio reports with a final status.
fn sip_code(status: CallStatus) -> &'static str {
    match status {
        CallStatus::Busy => "486",
        CallStatus::NoAnswer => "487",
        CallStatus::Failed => "500",
        _ => "200",
    }
}

/// The form parameters of one status callback, in Twilio's names.
pub fn status_params(call: &CallFacts, report: &StatusReport<'_>) -> Vec<(String, String)> {
    let mut p: Vec<(String, String)> = [
        ("AccountSid", call.account_sid.as_str()),
        ("ApiVersion", "2010-04-01"),
        ("CallSid", call.sid.as_str()),
        ("CallStatus", report.status.as_str()),
        ("Called", call.to.as_str()),
        ("Caller", call.from.as_str()),
        ("Direction", "outbound-api"),
        ("From", call.from.as_str()),
        ("To", call.to.as_str()),
        ("CallbackSource", "call-progress-events"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    p.push(("Timestamp".into(), report.at.to_rfc2822()));
    p.push(("SequenceNumber".into(), report.sequence.to_string()));
    let answered = matches!(
        report.status,
        CallStatus::InProgress | CallStatus::Completed
    );
    if let (true, Some(by)) = (answered, report.answered_by) {
        p.push(("AnsweredBy".into(), by.to_string()));
    }
    if report.status.is_final() {
        p.push(("CallDuration".into(), report.duration_secs.to_string()));
        p.push((
            "Duration".into(),
            report.duration_secs.div_ceil(60).to_string(),
        ));
        p.push(("SipResponseCode".into(), sip_code(report.status).into()));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_the_ids_from_the_query() {
        let t = CallbackTarget::parse(
            "https://gw.example/v1/webhooks/twilio/i1?contact_id=c-1&launch_id=L%201&tenant=t&x=1",
        )
        .unwrap();
        assert_eq!(t.contact_id.as_deref(), Some("c-1"));
        assert_eq!(t.launch_id.as_deref(), Some("L 1"));
        assert_eq!(t.tenant.as_deref(), Some("t"));
        assert_eq!(t.campaign_id, None);
        assert!(t.url.ends_with("&x=1"), "kept verbatim");
        let cases = ["/relative", "ftp://x/y", "http://", "not a url"];
        for bad in cases {
            assert!(CallbackTarget::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn final_statuses_carry_duration_and_answered_by_follows_the_answer() {
        let call = CallFacts {
            sid: "CA1".into(),
            account_sid: "AC1".into(),
            to: "+15550000001".into(),
            from: "+15550000002".into(),
            target: None,
            created_at: Utc::now(),
        };
        let names = |status, answered_by| {
            let report = StatusReport {
                status,
                sequence: 2,
                at: Utc::now(),
                answered_by,
                duration_secs: 61,
            };
            status_params(&call, &report)
        };
        let ringing = names(CallStatus::Ringing, Some("human"));
        assert!(!ringing.iter().any(|(k, _)| k == "AnsweredBy"));
        assert!(!ringing.iter().any(|(k, _)| k == "CallDuration"));
        let done = names(CallStatus::Completed, Some("human"));
        let get = |k: &str| done.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("AnsweredBy"), Some("human"));
        assert_eq!(get("CallDuration"), Some("61"));
        assert_eq!(get("Duration"), Some("2"));
        assert_eq!(get("SequenceNumber"), Some("2"));
        assert_eq!(get("CallbackSource"), Some("call-progress-events"));
        assert!(DateTime::parse_from_rfc2822(get("Timestamp").unwrap()).is_ok());
    }
}
