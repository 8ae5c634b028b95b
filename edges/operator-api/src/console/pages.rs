//! The console's fragments: each reads through the API's own handlers (same role checks,
//! tenant scope, filters and paging) and renders HTML. Action controls are rendered only
//! for a role that may use them; the action routes check the role again.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Duration, Utc};
use maud::{html, Markup};
use serde::Deserialize;
use uuid::Uuid;

use super::fmt::{self, at_both, short, span, Zone};
use super::{fragment, ConsoleError, Fragment, Operator};
use crate::app::AppState;
use crate::auth::{Principal, Role};
use crate::extract::{Path, Query};
use crate::model::{Exception, Job, Page, TimelineEntry};
use crate::query::{
    AuditQuery, ExceptionFilter, ExceptionsQuery, JobState, JobsQuery, PageQuery, RangeQuery,
};
use crate::reads;

/// Rows per page of a console list.
const PAGE_SIZE: i64 = 100;

pub async fn whoami(Operator(p): Operator) -> Fragment {
    fragment(html! {
        span { (p.subject) " (" (p.role) ") · tenant " strong { (p.tenant_id) } }
    })
}

fn link_contact(contact_id: &str) -> Markup {
    html! { a href={ "/console/contacts/" (contact_id) } { (contact_id) } }
}

/// A "next page" link that loads the next page into the list.
fn pager(base: &str, next: Option<&str>) -> Markup {
    html! {
        @if let Some(cursor) = next {
            @let sep = if base.contains('?') { "&" } else { "?" };
            p class="pager" {
                a href={ (base) (sep) "cursor=" (cursor) } { "Next page →" }
            }
        }
    }
}

/// A form posting an action; its outcome goes to the page's live region.
fn action(url: &str, label: &str, fields: Markup) -> Markup {
    html! {
        form class="inline" hx-post=(url) hx-target="#outcome" hx-swap="innerHTML" {
            (fields)
            button type="submit" { (label) }
        }
    }
}

/// An action that asks for a reason first (required when `required`).
fn action_with_reason(url: &str, label: &str, required: bool, extra: Markup) -> Markup {
    let id = format!("r-{:x}", fnv(url));
    html! {
        details {
            summary { (label) "…" }
            form hx-post=(url) hx-target="#outcome" hx-swap="innerHTML" {
                (extra)
                label for=(id) { "Reason" @if !required { " (optional)" } }
                input id=(id) name="reason" maxlength="500" required[required];
                button type="submit" { (label) }
            }
        }
    }
}

/// A short, stable id for form labels.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn now() -> DateTime<Utc> {
    callstream_platform::clock::now_utc()
}

// ---- Today ----

#[derive(Debug, Default, Deserialize)]
pub struct TodayForm {
    /// Another day than today (`2026-12-03`), in the operator's zone.
    day: Option<chrono::NaiveDate>,
}

pub async fn today(
    State(state): State<AppState>,
    Operator(p): Operator,
    zone: Zone,
    Query(f): Query<TodayForm>,
) -> Fragment {
    let today = now().with_timezone(&zone.0).date_naive();
    let day = f.day.unwrap_or(today);
    let day_start = fmt::start_of_local_day(day, zone.0);
    // The next local midnight: a day of a clock change is 23 or 25 hours long.
    let day_end = day
        .succ_opt()
        .map_or(day_start + Duration::hours(24), |next| {
            fmt::start_of_local_day(next, zone.0)
        });
    let range = RangeQuery {
        from: day_start,
        to: day_end,
    };
    let Json(buckets) = reads::delivery(State(state.clone()), p.clone(), Query(range)).await?;
    let Json(summary) = reads::summary(State(state.clone()), p.clone()).await?;
    let (accepted, delivered, recovered, missing) =
        buckets.iter().fold((0, 0, 0, 0), |(a, d, r, m), b| {
            (
                a + b.accepted,
                d + b.delivered,
                r + b.recovered,
                m + b.missing,
            )
        });
    let rate = (accepted > 0).then(|| delivered as f64 / accepted as f64);
    let threshold = state.config().delivery_threshold;
    let open_exceptions: i64 = summary.open_exceptions.iter().map(|c| c.count).sum();
    let held: i64 = summary.held_calls.iter().map(|c| c.count).sum();
    fragment(html! {
        section aria-labelledby="delivery-h" {
            h2 id="delivery-h" {
                "Delivery " @if day == today { "today" } @else { "on " (day.format("%a %b %-d")) }
            }
            p class="pager" {
                a href={ "/console/today?day=" (day.pred_opt().unwrap_or(day)) } { "← previous day" }
                @if day != today {
                    " · " a href="/console/today" { "today" }
                    " · " a href={ "/console/today?day=" (day.succ_opt().unwrap_or(day)) } { "next day →" }
                }
            }
            div class="cards" {
                div class="card" id="delivery-card" {
                    div { "Delivered by the platform" }
                    div class="big" {
                        @match rate {
                            Some(r) => span class=(if r < threshold { "bad" } else { "ok" }) {
                                (format!("{:.1} %", r * 100.0))
                            },
                            None => span class="muted" { "no launches yet" },
                        }
                    }
                    small { (delivered) " of " (accepted) " launches · " (recovered) " recovered · "
                        (missing) " missing · alert below " (format!("{:.0} %", threshold * 100.0)) }
                }
            }
            (super::chart::delivery(&buckets, day_start, threshold, zone.0))
        }
        section aria-labelledby="attention-h" {
            h2 id="attention-h" { "Needs attention" }
            div class="cards" {
                div class="card" {
                    div { a href="/console/exceptions" { "Open exceptions" } }
                    div class="big" { (open_exceptions) }
                    ul {
                        @for c in &summary.open_exceptions {
                            li { a href={ "/console/exceptions?exception_type=" (c.key) } { (c.key) } ": " (c.count) }
                        }
                    }
                }
                div class="card" {
                    div { a href="/console/missing" { "Missing completions" } }
                    div class="big" { (summary.missing_completions) }
                    small { "still open" }
                }
                div class="card" {
                    div { a href="/console/dead-letters" { "Dead letters" } }
                    div class="big" { (summary.dead_letters) }
                    small { "not replayed" }
                }
                div class="card" {
                    div { a href="/console/schedule?state=held" { "Held calls" } }
                    div class="big" { (held) }
                    ul {
                        @for c in &summary.held_calls {
                            li { (c.key.replace('_', " ")) ": " (c.count) }
                        }
                    }
                }
            }
        }
        p class="muted" { "As of " (fmt::at(now(), zone.0)) "; refreshes every 5 seconds." }
    })
}

// ---- Missing completions ----

pub async fn missing(
    State(state): State<AppState>,
    Operator(p): Operator,
    zone: Zone,
    Query(q): Query<PageQuery>,
) -> Fragment {
    let q = PageQuery {
        limit: Some(q.limit.unwrap_or(PAGE_SIZE)),
        ..q
    };
    let Json(page) = reads::missing_launches(State(state), p.clone(), Query(q)).await?;
    let acts = p.role >= Role::Operator;
    let now = now();
    fragment(html! {
        @if page.items.is_empty() {
            p class="ok" { "No missing completions: every launch's completion has arrived or been resolved." }
        } @else {
            table {
                caption class="muted" { "Launches accepted by the platform whose completion never came, oldest first." }
                thead { tr {
                    th scope="col" { "Contact" } th scope="col" { "Launch" } th scope="col" { "Provider call" }
                    th scope="col" { "Accepted" } th scope="col" { "Since the window closed" }
                    th scope="col" { "Recovery attempts" }
                    @if acts { th scope="col" { "Actions" } }
                } }
                tbody {
                    @for m in &page.items {
                        @let base = format!("/console/f/act/launches/{}", m.launch_id);
                        tr id={ "launch-" (m.launch_id) } {
                            td { (link_contact(&m.contact_id)) }
                            td { (short(m.launch_id)) }
                            td { code { (m.provider_call_id.as_deref().unwrap_or("—")) } }
                            td { @if let Some(a) = m.accepted_at { (at_both(a, zone.0, None)) } }
                            td { (span(now - m.deadline_at.unwrap_or(m.missing_at))) }
                            td class="attempts" {
                                (m.recovery_attempts)
                                @if let (Some(last), Some(at)) = (&m.last_lookup, m.last_lookup_at) {
                                    br;
                                    span class="muted" { (last) ", " (span(now - at)) " ago" }
                                }
                            }
                            @if acts {
                                td class="actions" {
                                    (action(&format!("{base}/recover"), "Recover now", html!{}))
                                    (action(&format!("{base}/advance"), "Advance as no-answer",
                                        html! { input type="hidden" name="as" value="no_answer"; }))
                                    (action(&format!("{base}/advance"), "Advance as voicemail",
                                        html! { input type="hidden" name="as" value="voicemail"; }))
                                    (action_with_reason(
                                        &format!("/console/f/act/exceptions/{}/ignore",
                                            callstream_domain::ids::completion_case::missing_exception(&m.launch_id)),
                                        "Ignore", true, html!{}))
                                }
                            }
                        }
                    }
                }
            }
            (pager("/console/missing", page.next_cursor.as_deref()))
        }
    })
}

// ---- Exceptions ----

#[derive(Debug, Default, Deserialize)]
pub struct ExceptionsForm {
    status: Option<ExceptionFilter>,
    exception_type: Option<String>,
    cursor: Option<String>,
}

/// The exception types to filter by (every type the schema knows).
fn exception_types() -> impl Iterator<Item = &'static str> {
    callstream_schemas::ExceptionType::ALL
        .iter()
        .filter(|t| **t != callstream_schemas::ExceptionType::Unknown)
        .map(|t| t.as_str())
}

pub async fn exceptions(
    State(state): State<AppState>,
    Operator(p): Operator,
    zone: Zone,
    Query(f): Query<ExceptionsForm>,
) -> Fragment {
    let exception_type = f.exception_type.filter(|t| !t.is_empty());
    let q = ExceptionsQuery {
        status: f.status,
        exception_type: exception_type.clone(),
        limit: Some(PAGE_SIZE),
        cursor: f.cursor,
    };
    let status = f.status.unwrap_or_default();
    let Json(page) = reads::list_exceptions(State(state), p.clone(), Query(q)).await?;
    let acts = p.role >= Role::Operator;
    let base = format!(
        "/console/exceptions?status={}{}",
        filter_name(status),
        exception_type
            .as_deref()
            .map(|t| format!("&exception_type={t}"))
            .unwrap_or_default()
    );
    fragment(html! {
        form class="filters" method="get" action="/console/exceptions" {
            label { "State"
                select name="status" {
                    @for s in [ExceptionFilter::Open, ExceptionFilter::Resolved, ExceptionFilter::Ignored, ExceptionFilter::All] {
                        option value=(filter_name(s)) selected[s == status] { (filter_name(s)) }
                    }
                }
            }
            label { "Type"
                select name="exception_type" {
                    option value="" { "any" }
                    @for t in exception_types() {
                        option value=(t) selected[exception_type.as_deref() == Some(t)] { (t) }
                    }
                    @if let Some(t) = exception_type.as_deref().filter(|t| !exception_types().any(|k| k == *t)) {
                        option value=(t) selected { (t) }
                    }
                }
            }
            button type="submit" { "Filter" }
        }
        @if page.items.is_empty() {
            p class="ok" { "No exceptions match." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "Opened" } th scope="col" { "Type" } th scope="col" { "State" }
                    th scope="col" { "Contact" } th scope="col" { "Reason" } th scope="col" { "Assignee" }
                    @if acts { th scope="col" { "Actions" } }
                } }
                tbody {
                    @for e in &page.items {
                        tr id={ "exception-" (e.exception_id) } {
                            td { (at_both(e.opened_at.unwrap_or(e.first_seen_at), zone.0, None)) }
                            td { (e.exception_type) @if e.urgent { " " strong class="bad" { "urgent" } } }
                            td { span class={ "state state-" (e.status) } { (e.status) } }
                            td { (link_contact(&e.contact_id)) }
                            td { (e.reason) @if let Some(d) = &e.detail { br; small { (d) } } }
                            td { (e.assignee.as_deref().unwrap_or("—")) }
                            @if acts { td class="actions" { (exception_actions(e)) } }
                        }
                    }
                }
            }
            (pager(&base, page.next_cursor.as_deref()))
        }
    })
}

fn filter_name(f: ExceptionFilter) -> &'static str {
    match f {
        ExceptionFilter::Open => "open",
        ExceptionFilter::Resolved => "resolved",
        ExceptionFilter::Ignored => "ignored",
        ExceptionFilter::All => "all",
    }
}

/// The actions on an open exception: retry now or later (in the lead's zone), cancel the
/// contact's future jobs, force finish, ignore, and retry for a failed CRM command.
fn exception_actions(e: &Exception) -> Markup {
    if e.status != "open" {
        return html! {};
    }
    let contact = format!("/console/f/act/contacts/{}", e.contact_id);
    let job = html! {
        @if let Some(j) = e.job_id { input type="hidden" name="job_id" value=(j); }
    };
    html! {
        (action(&format!("{contact}/retry-now"), "Retry now", job.clone()))
        (retry_later_form(&contact, e.job_id, None))
        (action_with_reason(&format!("{contact}/cancel-future-jobs"), "Cancel future jobs", true, html!{}))
        (action_with_reason(&format!("{contact}/force-finish"), "Force finish", false, html!{}))
        (action_with_reason(&format!("/console/f/act/exceptions/{}/ignore", e.exception_id), "Ignore", true, html!{}))
        (action_with_reason(&format!("/console/f/act/exceptions/{}/assign", e.exception_id), "Assign", false, html! {
            label for={ "as-" (e.exception_id) } { "Assign to (blank: unassign)" }
            input id={ "as-" (e.exception_id) } name="assignee" maxlength="256"
                value=(e.assignee.as_deref().unwrap_or(""));
        }))
        @if e.exception_type == "crm_failed" {
            (action_with_reason(&format!("/console/f/act/exceptions/{}/retry-crm", e.exception_id), "Retry the CRM write", false, html!{}))
        }
    }
}

/// Retry later: a date-time picker read in the lead's zone (named beside it); the lead's
/// zone comes from the job when known, else the form asks the server to use the contact's.
fn retry_later_form(contact_base: &str, job_id: Option<Uuid>, lead_zone: Option<&str>) -> Markup {
    let url = format!("{contact_base}/retry-later");
    let id = format!("at-{:x}", fnv(&format!("{url}{job_id:?}")));
    let zone_label = lead_zone.unwrap_or("the lead's zone");
    html! {
        details {
            summary { "Retry later…" }
            form hx-post=(url) hx-target="#outcome" hx-swap="innerHTML" {
                @if let Some(j) = job_id { input type="hidden" name="job_id" value=(j); }
                @if let Some(z) = lead_zone { input type="hidden" name="zone" value=(z); }
                label for=(id) { "Call at (" (zone_label) ")" }
                input id=(id) name="at_local" type="datetime-local" required;
                label for={ (id) "-r" } { "Reason (optional)" }
                input id={ (id) "-r" } name="reason" maxlength="500";
                button type="submit" { "Retry later" }
            }
        }
    }
}

// ---- Schedule ----

#[derive(Debug, Default, Deserialize)]
pub struct ScheduleForm {
    state: Option<JobState>,
    campaign_id: Option<String>,
    cursor: Option<String>,
}

pub async fn schedule(
    State(state): State<AppState>,
    Operator(p): Operator,
    zone: Zone,
    Query(f): Query<ScheduleForm>,
) -> Fragment {
    let campaign_id = f.campaign_id.filter(|c| !c.is_empty());
    let q = JobsQuery {
        state: f.state,
        active: Some(true),
        campaign_id: campaign_id.clone(),
        limit: Some(PAGE_SIZE),
        cursor: f.cursor,
        ..JobsQuery::default()
    };
    let Json(page) = reads::list_jobs(State(state), p, Query(q)).await?;
    let mut base = String::from("/console/schedule?");
    if let Some(s) = f.state {
        base.push_str(&format!("state={}&", s.as_str()));
    }
    if let Some(c) = &campaign_id {
        base.push_str(&format!("campaign_id={c}&"));
    }
    let states = [
        None,
        Some(JobState::Held),
        Some(JobState::Scheduled),
        Some(JobState::Due),
        Some(JobState::Requested),
    ];
    fragment(html! {
        form class="filters" method="get" action="/console/schedule" {
            label { "State"
                select name="state" {
                    @for s in states {
                        option value=(s.map_or("", JobState::as_str)) selected[s == f.state] {
                            (s.map_or("every upcoming", JobState::as_str))
                        }
                    }
                }
            }
            label { "Campaign"
                input name="campaign_id" value=(campaign_id.as_deref().unwrap_or("")) maxlength="256";
            }
            button type="submit" { "Filter" }
        }
        @if page.items.is_empty() {
            p class="muted" { "No upcoming calls match." }
        } @else {
            (jobs_table(&page.items, zone, true))
            (pager(base.trim_end_matches(['&', '?']), page.next_cursor.as_deref()))
        }
    })
}

/// A state calling rule's id (`state_hours:FL`, `frequency_cap:FL:3_per_24h`): shown as it
/// is written in the rules file, so an operator can look it up.
fn is_rule(reason: &str) -> bool {
    reason.contains(':')
}

/// A reason code for people: words, except a rule's id, which stays as written.
fn reason_text(reason: &str) -> String {
    if is_rule(reason) {
        reason.to_owned()
    } else {
        reason.replace('_', " ")
    }
}

/// Jobs as a table: planned time in the operator's zone with the lead's beside it, slot,
/// state with what holds it, the time the lead asked for, and the job it replaced.
fn jobs_table(jobs: &[Job], zone: Zone, with_contact: bool) -> Markup {
    html! {
        table {
            thead { tr {
                th scope="col" { "Planned" }
                @if with_contact { th scope="col" { "Contact" } }
                th scope="col" { "Campaign" } th scope="col" { "Slot" } th scope="col" { "State" }
                th scope="col" { "Lead asked for" } th scope="col" { "Replaces" } th scope="col" { "Job" }
            } }
            tbody {
                @for j in jobs {
                    tr id={ "job-" (j.job_id) } {
                        td { (at_both(j.planned_at, zone.0, j.time_zone.as_deref())) }
                        @if with_contact { td { (link_contact(&j.contact_id)) } }
                        td { (j.campaign_id.as_deref().unwrap_or("—")) }
                        td { @if let Some(s) = j.slot { (s) } @else { "—" } }
                        td {
                            span class={ "state state-" (j.state) } { (j.state) }
                            @if let Some(r) = &j.reason { br; small { (reason_text(r)) } }
                            @if j.state == "held" || j.reason.as_deref().is_some_and(is_rule) {
                                @if let Some(d) = &j.reason_detail { br; small { (d) } }
                            }
                        }
                        td { @if let Some(r) = j.requested_at { (at_both(r, zone.0, j.time_zone.as_deref())) } @else { "—" } }
                        td { @if let Some(r) = j.replaces_job_id {
                            a href={ "/console/contacts/" (j.contact_id) "#job-" (r) } { (short(r)) }
                        } @else { "—" } }
                        td { (short(j.job_id)) }
                    }
                }
            }
        }
    }
}

// ---- Contact ----

pub async fn contact(
    State(state): State<AppState>,
    Operator(p): Operator,
    zone: Zone,
    Path(contact_id): Path<String>,
) -> Fragment {
    let jobs_q = JobsQuery {
        contact_id: Some(contact_id.clone()),
        limit: Some(PAGE_SIZE),
        ..JobsQuery::default()
    };
    let Json(jobs) = reads::list_jobs(State(state.clone()), p.clone(), Query(jobs_q)).await?;
    let Json(timeline) = reads::timeline(
        State(state.clone()),
        p.clone(),
        Path(contact_id.clone()),
        Query(PageQuery {
            limit: Some(500),
            cursor: None,
        }),
    )
    .await?;
    let controls = control_changes_during(&state, &p, &timeline).await?;
    let lead_zone = lead_zone(&jobs.items);
    let acts = p.role >= Role::Operator;
    let base = format!("/console/f/act/contacts/{contact_id}");
    let latest_job = jobs.items.last().map(|j| j.job_id);
    // The timeline and the control changes in it, oldest first.
    let mut entries: Vec<(DateTime<Utc>, Markup)> = timeline
        .items
        .iter()
        .map(|e| (e.occurred_at, timeline_entry(e, zone)))
        .collect();
    entries.extend(controls.iter().map(|c| {
        (
            c.occurred_at,
            html! {
                li class="control" id={ "ev-" (c.event_id) } {
                    strong { (fmt::at(c.occurred_at, zone.0)) } " · control change: "
                    (c.action) " by " (c.actor_id) " (" (c.result) ")"
                    @if let Some(r) = &c.reason { " — " em { (r) } }
                    @if let Some(d) = &c.detail { br; small { (d) } }
                }
            },
        )
    }));
    entries.sort_by_key(|(t, _)| *t);
    fragment(html! {
        p { "Lead's zone: " strong { (lead_zone.as_deref().unwrap_or("unknown")) } }
        @if acts {
            div class="actions" {
                (action(&format!("{base}/retry-now"), "Retry now", html!{}))
                (retry_later_form(&base, latest_job, lead_zone.as_deref()))
                (action_with_reason(&format!("{base}/cancel-future-jobs"), "Cancel future jobs", true, html!{}))
                (action_with_reason(&format!("{base}/force-finish"), "Force finish", false, html!{}))
            }
        }
        h2 { "Jobs" }
        @if jobs.items.is_empty() { p class="muted" { "No jobs." } } @else { (jobs_table(&jobs.items, zone, false)) }
        h2 { "Timeline" }
        p class="muted" { "Every event of this contact, oldest first, with the control changes made meanwhile. "
            "A “caused by” link goes to the event that caused it." }
        ol class="timeline" {
            @for (_, entry) in &entries { (entry) }
        }
    })
}

/// The lead's zone: that of the contact's latest planned job that has one (`jobs` in planned
/// order, as `GET /v1/jobs` answers).
pub(super) fn lead_zone(jobs: &[Job]) -> Option<String> {
    jobs.iter().rev().find_map(|j| j.time_zone.clone())
}

fn timeline_entry(e: &TimelineEntry, zone: Zone) -> Markup {
    html! {
        li id={ "ev-" (e.event_id) } {
            strong { (fmt::at(e.occurred_at, zone.0)) } " · " (e.event_type)
            @if let Some(w) = &e.what { ": " (w) }
            @if let Some(r) = &e.reason { " — " em { (r.replace('_', " ")) } }
            br;
            small {
                "event " (short(e.event_id))
                @if let Some(c) = e.causation_id {
                    " · caused by " a href={ "#ev-" (c) } class="causation" { (short(c)) }
                }
            }
        }
    }
}

/// The latest `limit` control changes, newest first; none for a viewer (the audit names
/// who acted: operators and admins only).
async fn control_history(
    state: &AppState,
    p: &Principal,
    limit: i64,
) -> Result<Option<Vec<crate::model::AuditEntry>>, ConsoleError> {
    if p.role < Role::Operator {
        return Ok(None);
    }
    let Json(page) = reads::audit(
        State(state.clone()),
        p.clone(),
        Query(AuditQuery {
            subject_type: Some("control".into()),
            limit: Some(limit),
            ..AuditQuery::default()
        }),
    )
    .await?;
    Ok(Some(page.items))
}

/// Control changes of the contact's tenant while its timeline ran (the pauses and switches
/// that may have held or changed its calls).
async fn control_changes_during(
    state: &AppState,
    p: &Principal,
    timeline: &Page<TimelineEntry>,
) -> Result<Vec<crate::model::AuditEntry>, ConsoleError> {
    let (Some(first), Some(last)) = (timeline.items.first(), timeline.items.last()) else {
        return Ok(Vec::new());
    };
    let Some(history) = control_history(state, p, 500).await? else {
        return Ok(Vec::new());
    };
    let until = last.occurred_at.max(now());
    Ok(history
        .into_iter()
        .filter(|c| c.occurred_at >= first.occurred_at && c.occurred_at <= until)
        .collect())
}

// ---- Controls ----

pub async fn controls(
    State(state): State<AppState>,
    Operator(p): Operator,
    zone: Zone,
) -> Fragment {
    let Json(settings) = reads::control(State(state.clone()), p.clone()).await?;
    let history = control_history(&state, &p, PAGE_SIZE).await?;
    let admin = p.role >= Role::Admin;
    let switch = |setting: &str, campaign: Option<&str>| -> bool {
        settings
            .iter()
            .find(|s| s.setting == setting && s.campaign_id == campaign.unwrap_or(""))
            .and_then(|s| s.enabled)
            .unwrap_or(setting == "crm_writes")
    };
    let paused_campaigns: Vec<&str> = settings
        .iter()
        .filter(|s| s.setting == "campaign_pause" && s.enabled == Some(true))
        .map(|s| s.campaign_id.as_str())
        .collect();
    let rows = [
        ("system_pause", "System pause", "paused", "running"),
        (
            "shadow_mode",
            "Shadow mode",
            "on (no calls are made)",
            "off",
        ),
        ("crm_writes", "CRM writes", "allowed", "stopped"),
    ];
    fragment(html! {
        table {
            thead { tr { th scope="col" { "Setting" } th scope="col" { "Now" } th scope="col" { "Last changed" }
                @if admin { th scope="col" { "Change" } } } }
            tbody {
                @for (setting, name, on, off) in rows {
                    @let enabled = switch(setting, None);
                    @let current = settings.iter().find(|s| s.setting == setting && s.campaign_id.is_empty());
                    tr id={ "control-" (setting) } {
                        th scope="row" { (name) }
                        td { strong { (if enabled { on } else { off }) } }
                        td { @if let Some(c) = current {
                            (fmt::at(c.changed_at, zone.0)) " by " (c.actor_id)
                            @if let Some(r) = &c.reason { " — " em { (r) } }
                        } @else { span class="muted" { "never changed" } } }
                        @if admin { td { (action_with_reason(&format!("/console/f/act/control/{setting}"),
                            &format!("Turn {}", if enabled { "off" } else { "on" }), false,
                            html! { input type="hidden" name="enabled" value=(!enabled); })) } }
                    }
                }
            }
        }
        h2 { "Campaign pauses" }
        @if paused_campaigns.is_empty() { p { "No campaign is paused." } } @else {
            ul { @for c in &paused_campaigns {
                li { "Campaign " strong { (c) } " is paused "
                    a href={ "/console/schedule?state=held&campaign_id=" (c) } { "(its held calls)" }
                    @if admin { " " (action_with_reason("/console/f/act/control/campaign_pause", "Resume", false,
                        html! { input type="hidden" name="enabled" value="false"; input type="hidden" name="campaign_id" value=(c); })) }
                }
            } }
        }
        @if admin {
            (action_with_reason("/console/f/act/control/campaign_pause", "Pause a campaign", false, html! {
                label for="pause-campaign" { "Campaign" }
                input id="pause-campaign" name="campaign_id" required maxlength="256";
                input type="hidden" name="enabled" value="true";
            }))
        }
        @if let Some(history) = history {
            h2 { "History" }
            @if history.is_empty() { p class="muted" { "No control changes yet." } } @else {
                table {
                    thead { tr { th scope="col" { "When" } th scope="col" { "Change" } th scope="col" { "Who" }
                        th scope="col" { "Why" } th scope="col" { "Detail" } } }
                    tbody { @for h in &history {
                        tr {
                            td { (fmt::at(h.occurred_at, zone.0)) }
                            td { (h.action) " " (h.subject_id) }
                            td { (h.actor_id) " (" (h.actor_kind) ")" }
                            td { (h.reason.as_deref().unwrap_or("—")) }
                            td { (h.detail.as_deref().unwrap_or("")) }
                        }
                    } }
                }
            }
        }
    })
}

// ---- Dead letters ----

pub async fn dead_letters(
    State(state): State<AppState>,
    Operator(p): Operator,
    zone: Zone,
    Query(q): Query<PageQuery>,
) -> Fragment {
    let q = PageQuery {
        limit: Some(q.limit.unwrap_or(PAGE_SIZE)),
        ..q
    };
    let Json(page) = reads::dead_letters(State(state), p.clone(), Query(q)).await?;
    let acts = p.role >= Role::Operator;
    fragment(html! {
        @if page.items.is_empty() {
            p class="ok" { "No dead letters: every record was handled." }
        } @else {
            table {
                caption class="muted" { "Records a processor could not handle, newest first. A replay sends the record again to the topic it came from." }
                thead { tr {
                    th scope="col" { "Parked" } th scope="col" { "Processor" } th scope="col" { "What" }
                    th scope="col" { "Contact" } th scope="col" { "Why" } th scope="col" { "From" }
                    th scope="col" { "Replayed" }
                    @if acts { th scope="col" { "Actions" } }
                } }
                tbody {
                    @for d in &page.items {
                        tr id={ "letter-" (d.letter_id) } {
                            td { (fmt::at(d.dead_at, zone.0)) }
                            td { (d.app.as_deref().unwrap_or("—")) " (" (d.kind.as_deref().unwrap_or("?")) ")" }
                            td { (d.event_type.as_deref().unwrap_or("not an event")) }
                            td { @if let Some(c) = &d.contact_id { (link_contact(c)) } @else { "—" } }
                            td { (d.reason.as_deref().unwrap_or("—")) }
                            td { code { (d.source.as_deref().unwrap_or("—")) } }
                            td { @if let Some(at) = d.replayed_at {
                                (fmt::at(at, zone.0)) " by " (d.replayed_by.as_deref().unwrap_or("?"))
                            } @else { "—" } }
                            @if acts { td class="actions" {
                                @if d.replayable {
                                    (action_with_reason(&format!("/console/f/act/dead-letters/{}/replay", d.letter_id), "Replay", false, html!{}))
                                } @else { span class="muted" { "for reading only" } }
                            } }
                        }
                    }
                }
            }
            (pager("/console/dead-letters", page.next_cursor.as_deref()))
        }
    })
}
