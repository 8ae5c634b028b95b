//! What a notification says and where it goes: an alert, an opened exception or a dead
//! letter becomes one [`Notification`] per channel that the tenant's routes (and the
//! deployment's, under `*`) name and that admits the tenant. Pure.
//!
//! A dead letter is notified through the `dead_letter` exception it opens (see
//! [`dead_letter_exception`]).
//!
//! Not notified: exceptions other than their opening, and `notification_failed`
//! exceptions (the notifier's own: a channel that is down must not notify about itself in
//! a loop; they are in the console).

use callstream_domain::failures::PermanentFailure;
use callstream_domain::ids::notifier as ids;
use callstream_kit::control::{NotificationPolicy, ALL_TENANTS};
use callstream_schemas::{
    Actor, Alert, AlertKind, AlertStatus, ExceptionEvent, ExceptionStatus, ExceptionType,
    Notification, NotificationSeverity, Timestamp,
};
use uuid::Uuid;

use crate::channels::Channels;

/// A dead letter, as its headers (and, when it decodes, its value) tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Letter {
    /// The tenant of the parked record, when its value decodes (else `*`: only the
    /// deployment's routes see it).
    pub tenant: String,
    pub app: String,
    /// `topic/partition/offset` of the parked record.
    pub source: String,
    /// `record`, `timer` or `effect`.
    pub kind: String,
    pub reason: String,
    pub event_id: Option<Uuid>,
    pub correlation_id: Option<Uuid>,
    pub at: Timestamp,
}

/// What is notified, before it has a channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub tenant: String,
    pub kind: String,
    pub digest_key: String,
    pub severity: NotificationSeverity,
    pub title: String,
    pub text: String,
    /// Path under the console (`/exceptions?...`).
    pub console_path: String,
    pub subject_id: Option<String>,
    /// Names the notification (with the channel): what it is about.
    pub about: String,
    pub causation_id: Option<Uuid>,
    pub correlation_id: Option<Uuid>,
    pub at: Timestamp,
}

fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// The draft of an alert event (raised or resolved: both are said).
pub fn alert(a: &Alert) -> Draft {
    let resolved = a.status == AlertStatus::Resolved;
    let what = match a.kind {
        AlertKind::DeliveryRateLow => format!(
            "delivery rate {} (threshold {})",
            percent(a.rate),
            percent(a.threshold)
        ),
        AlertKind::MissingBacklog => format!(
            "{} missing completions open (threshold {})",
            a.rate, a.threshold
        ),
        AlertKind::DeadLetters => format!("{} dead letters (threshold {})", a.rate, a.threshold),
        AlertKind::ConsumerLag => format!(
            "consumer lag {} of {} (threshold {})",
            a.rate,
            a.subject.as_deref().unwrap_or("a processor"),
            a.threshold
        ),
        AlertKind::ErrorRate => format!(
            "{} failed launches and CRM writes in 10 minutes (threshold {})",
            a.rate, a.threshold
        ),
        AlertKind::Unknown => format!("value {} (threshold {})", a.rate, a.threshold),
    };
    let state = if resolved { "resolved" } else { "raised" };
    let mut text = format!(
        "Alert {} {state} for tenant {}: {what}.",
        a.kind, a.tenant_id
    );
    if let Some(detail) = &a.detail {
        text.push_str(&format!("\n{detail}."));
    }
    Draft {
        tenant: a.tenant_id.clone(),
        kind: format!("alert.{}", a.kind),
        // Never grouped: each raise and each resolve is its own message.
        digest_key: format!("{}/alert/{}/{state}", a.tenant_id, a.alert_id),
        severity: if resolved {
            NotificationSeverity::Info
        } else {
            NotificationSeverity::Critical
        },
        title: format!(
            "[{}] {} {state}: {what}",
            a.tenant_id,
            a.kind.as_str().replace('_', " ")
        ),
        text,
        console_path: "/today".into(),
        subject_id: Some(a.alert_id.to_string()),
        about: format!("alert/{}", a.event_id),
        causation_id: Some(a.event_id),
        correlation_id: a.correlation_id,
        at: a.occurred_at,
    }
}

/// The draft of an exception event: only an opening, and never the notifier's own.
pub fn exception(e: &ExceptionEvent) -> Option<Draft> {
    if e.status != ExceptionStatus::Open || e.exception_type == ExceptionType::NotificationFailed {
        return None;
    }
    let kind = format!("exception.{}", e.exception_type);
    // An urgent case (a lead asking for a person) is never held back in a digest.
    let digest_key = if e.urgent {
        format!("{}/{kind}/{}", e.tenant_id, e.exception_id)
    } else {
        format!("{}/{kind}", e.tenant_id)
    };
    let mut text = format!(
        "{} exception opened for contact {} ({}).",
        e.exception_type, e.contact_id, e.reason
    );
    if let Some(campaign) = &e.campaign_id {
        text.push_str(&format!(" Campaign {campaign}."));
    }
    if let Some(detail) = &e.detail {
        text.push_str(&format!("\n{detail}"));
    }
    Some(Draft {
        tenant: e.tenant_id.clone(),
        digest_key,
        severity: if e.urgent {
            NotificationSeverity::Critical
        } else {
            NotificationSeverity::Warning
        },
        title: format!(
            "[{}] {}{} exception: contact {}",
            e.tenant_id,
            if e.urgent { "URGENT " } else { "" },
            e.exception_type.as_str().replace('_', " "),
            e.contact_id
        ),
        text,
        console_path: match e.exception_type {
            ExceptionType::DeadLetter => "/dead-letters".into(),
            t => format!("/exceptions?exception_type={t}"),
        },
        subject_id: Some(e.exception_id.to_string()),
        about: format!("exception/{}/open", e.exception_id),
        causation_id: Some(e.event_id),
        correlation_id: e.correlation_id,
        at: e.occurred_at,
        kind,
    })
}

/// The exception a dead letter opens: its id is the letter's (as the dead-letters view
/// names it), so the console links the two and an operator's replay resolves it.
pub fn dead_letter_exception(l: &Letter, letter_id: Uuid, key: &str) -> ExceptionEvent {
    ExceptionEvent {
        event_id: ids::record(&letter_id, "dead-letter-exception-open"),
        tenant_id: l.tenant.clone(),
        occurred_at: l.at,
        causation_id: l.event_id,
        correlation_id: l.correlation_id,
        exception_id: letter_id,
        status: ExceptionStatus::Open,
        exception_type: ExceptionType::from(PermanentFailure::DeadLettered),
        urgent: false,
        contact_id: key.to_owned(),
        campaign_id: None,
        job_id: None,
        launch_id: None,
        call_id: None,
        operation_id: None,
        reason: "dead_letter".into(),
        detail: Some(format!(
            "{} could not handle a {} ({}) and parked it on the dead-letter topic: {}. \
             Look at it, and replay it from the console once the cause is fixed.",
            l.app, l.kind, l.source, l.reason
        )),
        actor: Actor::system(crate::emit::ACTOR),
        assignee: None,
    }
}

/// A route that names a channel the notifier does not have, or one that does not admit
/// the tenant: nothing is sent there (and the notifier says so in its log and metrics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub tenant: String,
    pub channel: String,
    pub why: &'static str,
}

/// The notifications of `draft`: one per channel its tenant's routes (`tenant`) and the
/// deployment's (`deployment`, the `*` routes) name, each channel once.
pub fn notifications(
    draft: &Draft,
    tenant: Option<&NotificationPolicy>,
    deployment: Option<&NotificationPolicy>,
    channels: &Channels,
    console_url: Option<&str>,
) -> (Vec<Notification>, Vec<Refused>) {
    let mut out: Vec<Notification> = Vec::new();
    let mut refused = Vec::new();
    let policies = [tenant, deployment.filter(|_| draft.tenant != ALL_TENANTS)];
    for policy in policies.into_iter().flatten() {
        for (name, urgent) in policy.channels_for(&draft.kind) {
            let Some(channel) = channels.get(name) else {
                refused.push(Refused {
                    tenant: draft.tenant.clone(),
                    channel: name.to_owned(),
                    why: "no such channel",
                });
                continue;
            };
            if !channel.admits(&draft.tenant) {
                refused.push(Refused {
                    tenant: draft.tenant.clone(),
                    channel: name.to_owned(),
                    why: "the channel does not admit the tenant",
                });
                continue;
            }
            if let Some(same) = out.iter_mut().find(|n| n.channel == name) {
                same.urgent |= urgent;
                continue;
            }
            let id = ids::notification(&draft.tenant, name, &draft.about);
            out.push(Notification {
                event_id: id,
                tenant_id: draft.tenant.clone(),
                occurred_at: draft.at,
                causation_id: draft.causation_id,
                correlation_id: draft.correlation_id,
                notification_id: id,
                channel: name.to_owned(),
                kind: draft.kind.clone(),
                digest_key: draft.digest_key.clone(),
                severity: draft.severity,
                urgent,
                title: draft.title.clone(),
                text: draft.text.clone(),
                link: console_url.map(|base| format!("{base}{}", draft.console_path)),
                subject_id: draft.subject_id.clone(),
            });
        }
    }
    (out, refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::{Channel, ChannelKind};
    use callstream_schemas::{Actor, NotificationRoute, NotificationRoutes};

    fn channels() -> Channels {
        let chat = |tenants: &[&str]| Channel {
            kind: ChannelKind::Chat {
                url: "http://127.0.0.1:9/".into(),
            },
            tenants: tenants.iter().map(|t| t.to_string()).collect(),
            per_minute: 30,
        };
        Channels {
            channels: [
                ("acme-chat".to_string(), chat(&["acme"])),
                ("globex-chat".to_string(), chat(&["globex"])),
                ("ops".to_string(), chat(&["*"])),
            ]
            .into(),
            smtp: None,
        }
    }

    fn policy(routes: &[(&[&str], &str, bool)]) -> NotificationPolicy {
        NotificationPolicy::from_wire(&NotificationRoutes {
            routes: routes
                .iter()
                .map(|(kinds, channel, urgent)| NotificationRoute {
                    kinds: kinds.iter().map(|k| k.to_string()).collect(),
                    channel: channel.to_string(),
                    urgent: *urgent,
                })
                .collect(),
            quiet_hours: None,
            digest_seconds: 300,
        })
        .unwrap()
    }

    fn opened(tenant: &str, t: ExceptionType, urgent: bool) -> ExceptionEvent {
        ExceptionEvent {
            event_id: Uuid::from_u128(1),
            tenant_id: tenant.into(),
            occurred_at: Timestamp::from_timestamp_millis(1_700_000_000_000).unwrap(),
            causation_id: None,
            correlation_id: None,
            exception_id: Uuid::from_u128(2),
            status: ExceptionStatus::Open,
            exception_type: t,
            urgent,
            contact_id: "c-1".into(),
            campaign_id: None,
            job_id: None,
            launch_id: None,
            call_id: None,
            operation_id: None,
            reason: "crm_unavailable".into(),
            detail: Some("503 after 6 attempts".into()),
            actor: Actor::system("crm-dispatcher"),
            assignee: None,
        }
    }

    #[test]
    fn an_opened_exception_goes_to_each_routed_channel_once() {
        let draft = exception(&opened("acme", ExceptionType::CrmFailed, false)).unwrap();
        let tenant = policy(&[
            (&["exception.*"], "acme-chat", false),
            (&["*"], "acme-chat", true),
        ]);
        let ops = policy(&[(&["exception.crm_failed"], "ops", false)]);
        let (out, refused) = notifications(
            &draft,
            Some(&tenant),
            Some(&ops),
            &channels(),
            Some("https://c/console"),
        );
        assert!(refused.is_empty());
        let names: Vec<_> = out.iter().map(|n| n.channel.as_str()).collect();
        assert_eq!(names, ["acme-chat", "ops"]);
        assert!(
            out[0].urgent,
            "a matching urgent route makes it urgent there"
        );
        assert_eq!(out[0].kind, "exception.crm_failed");
        assert_eq!(out[0].digest_key, "acme/exception.crm_failed");
        assert_eq!(
            out[0].link.as_deref(),
            Some("https://c/console/exceptions?exception_type=crm_failed")
        );
        assert_ne!(out[0].notification_id, out[1].notification_id);
        // Routed again (a redelivery), the same ids.
        let (again, _) = notifications(&draft, Some(&tenant), Some(&ops), &channels(), None);
        assert_eq!(again[0].notification_id, out[0].notification_id);
    }

    #[test]
    fn a_route_to_another_tenants_channel_sends_nothing_there() {
        let draft = exception(&opened("acme", ExceptionType::NoSlot, false)).unwrap();
        let tenant = policy(&[(&["*"], "globex-chat", false), (&["*"], "nowhere", false)]);
        let (out, refused) = notifications(&draft, Some(&tenant), None, &channels(), None);
        assert!(out.is_empty());
        assert_eq!(refused.len(), 2);
        assert_eq!(refused[0].why, "the channel does not admit the tenant");
    }

    #[test]
    fn only_openings_are_notified_and_never_the_notifiers_own_failures() {
        let mut resolved = opened("acme", ExceptionType::CrmFailed, false);
        resolved.status = ExceptionStatus::Resolved;
        assert!(exception(&resolved).is_none());
        assert!(exception(&opened("acme", ExceptionType::NotificationFailed, false)).is_none());
        let urgent = exception(&opened("acme", ExceptionType::UrgentRequest, true)).unwrap();
        assert_eq!(urgent.severity, NotificationSeverity::Critical);
        assert!(
            urgent.digest_key.ends_with(&Uuid::from_u128(2).to_string()),
            "never grouped"
        );
    }
}
