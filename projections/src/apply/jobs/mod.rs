//! The jobs view: one row per planned call with its state, the reason for it, and its
//! lineage (the job it replaces and the one that replaced it).
//!
//! A job's state is the one carried by the greatest `(rank, time, event id)` seen for it,
//! ranks following the life of a job (requested < scheduled < due < dispatching <
//! launched < replaced < terminal states < completed), so late or reordered events never
//! move a job backwards. Completions reach the job through `job_launches`, which keeps
//! the launch -> job link and the launch's greatest completion, whichever arrives first.
//!
//! A batch takes two statements: every launch link and completion it carries goes into
//! `job_launches` (one upsert, which returns the rows it changed), then every job row it
//! changes goes into `jobs` (one upsert), with a completion for each launch that now has
//! both its job and a completion. The completion is always the stored (greatest) one,
//! never the incoming event, so the order completions arrive in does not matter.

mod rows;

use callstream_schemas::{
    AnyEvent, CallEvent, CallLaunch, ContactState, JobState, LaunchCommand, LaunchStatus,
    ScheduleEvent, ScheduleEventKind, ScheduleRequest, ScheduleRequestKind,
};
use sqlx::PgConnection;
use uuid::Uuid;

use self::rows::{copy_jobs, copy_links, write_jobs, write_links, JobRow, LinkRow, MergedLink};
use super::fold::Fold;
use super::{Located, Write};
use crate::view::Tables;

const REQUESTED: (&str, i16) = ("requested", 1);
const SCHEDULED: (&str, i16) = ("scheduled", 2);
const DUE: (&str, i16) = ("due", 3);
const DISPATCHING: (&str, i16) = ("dispatching", 4);
const LAUNCHED: (&str, i16) = ("launched", 5);
const AMBIGUOUS: (&str, i16) = ("ambiguous", 5);
/// Held by a pause or a guard, at its slot (the contact processor, seen on `contact-state`)
/// or at the last hop (the launch dispatcher): re-planned (replaced) when it lifts.
const HELD: (&str, i16) = ("held", 6);
const REPLACED: (&str, i16) = ("replaced", 8);
const CANCELLED: (&str, i16) = ("cancelled", 9);
const REFUSED: (&str, i16) = ("refused", 9);
const FAILED: (&str, i16) = ("failed", 9);
const SHADOW: (&str, i16) = ("shadow", 9);
/// A call that happened happened: nothing later overrides it.
const COMPLETED: (&str, i16) = ("completed", 10);

type Jobs<'a> = Fold<(&'a str, Uuid), JobRow<'a>>;
type Links<'a> = Fold<(&'a str, Uuid), LinkRow<'a>>;

pub(super) async fn apply(
    conn: &mut PgConnection,
    tables: Tables,
    records: &[Located<'_>],
    how: Write,
) -> Result<(), sqlx::Error> {
    let mut jobs = Jobs::default();
    let mut links = Links::default();
    for record in records {
        match record.event {
            AnyEvent::ScheduleRequest(r) => schedule_request(&mut jobs, r),
            AnyEvent::ScheduleEvent(e) => schedule_event(&mut jobs, e),
            AnyEvent::LaunchCommand(c) => launch_command(&mut jobs, &mut links, c),
            AnyEvent::CallLaunch(l) => call_launch(&mut jobs, &mut links, l),
            AnyEvent::CallEvent(e) => call_event(&mut links, e),
            AnyEvent::ContactState(c) => held_jobs(&mut jobs, c),
            _ => {}
        }
    }
    let merged = match how {
        Write::Upsert => write_links(conn, tables, links.rows()).await?,
        // Empty tables: the rows as stored are the folded ones.
        Write::Copy => {
            copy_links(conn, tables, links.rows()).await?;
            links.rows().iter().map(MergedLink::from).collect()
        }
    };
    // Every launch the batch touched that now has both its job and a completion completes
    // that job. The fold keeps the greatest completion whatever the position, so adding
    // them after the batch's own changes gives the rows of applying them in place.
    for link in &merged {
        let (Some(job_id), Some(at), Some(event_id)) =
            (link.job_id, link.completion_at, link.completion_event_id)
        else {
            continue;
        };
        let Some(batch_link) = links.get(&(link.tenant_id.as_str(), link.launch_id)) else {
            continue;
        };
        let mut change = JobRow::new(
            batch_link.tenant_id,
            job_id,
            batch_link.contact_id,
            COMPLETED,
            at,
            event_id,
        );
        change.outcome = link.outcome.as_deref();
        change.launch_id = Some(link.launch_id);
        jobs.add((batch_link.tenant_id, job_id), change);
    }
    match how {
        Write::Upsert => write_jobs(conn, tables, jobs.rows()).await,
        Write::Copy => copy_jobs(conn, tables, jobs.rows()).await,
    }
}

fn add<'a>(jobs: &mut Jobs<'a>, change: JobRow<'a>) {
    jobs.add((change.tenant_id, change.job_id), change);
}

fn schedule_request<'a>(jobs: &mut Jobs<'a>, r: &'a ScheduleRequest) {
    let state = match r.kind {
        ScheduleRequestKind::Plan => REQUESTED,
        ScheduleRequestKind::Cancel => CANCELLED,
        ScheduleRequestKind::Unknown => return,
    };
    let mut change = JobRow::new(
        &r.tenant_id,
        r.job_id,
        &r.contact_id,
        state,
        r.occurred_at,
        r.event_id,
    );
    change.campaign_id = Some(&r.campaign_id);
    change.origin = Some(r.origin.as_str());
    change.attempt = r.attempt;
    change.reason = Some(&r.reason);
    change.reason_detail = r.reason_detail.as_deref();
    if r.kind == ScheduleRequestKind::Plan {
        change.plan_reason = Some(&r.reason);
        change.earliest_at = r.earliest_at;
        change.requested_at = r.requested_at;
        change.time_zone = r.time_zone.as_deref();
        change.time_zone_source = r.time_zone_source.map(|s| s.as_str());
        change.replaces_job_id = r.replaces_job_id;
    }
    let replaced = match (r.kind, r.replaces_job_id) {
        (ScheduleRequestKind::Plan, Some(old)) => Some(replaced(&change, old)),
        _ => None,
    };
    add(jobs, change);
    if let Some(old) = replaced {
        add(jobs, old);
    }
}

fn schedule_event<'a>(jobs: &mut Jobs<'a>, e: &'a ScheduleEvent) {
    let state = match e.kind {
        ScheduleEventKind::Allocated => SCHEDULED,
        ScheduleEventKind::Cancelled => CANCELLED,
        ScheduleEventKind::Refused => REFUSED,
        ScheduleEventKind::LaunchDue => DUE,
        ScheduleEventKind::Unknown => return,
    };
    let mut change = JobRow::new(
        &e.tenant_id,
        e.job_id,
        &e.contact_id,
        state,
        e.occurred_at,
        e.event_id,
    );
    change.campaign_id = Some(&e.campaign_id);
    change.origin = Some(e.origin.as_str());
    change.reason = Some(&e.reason);
    change.reason_detail = e.reason_detail.as_deref();
    change.earliest_at = e.earliest_at;
    change.requested_at = e.requested_at;
    change.time_zone = e.time_zone.as_deref();
    change.time_zone_source = e.time_zone_source.map(|s| s.as_str());
    change.replaces_job_id = e.replaces_job_id;
    if e.kind == ScheduleEventKind::Allocated {
        change.slot = e.slot;
        change.slot_at = e.slot_at;
    }
    let replaced = match (e.kind, e.replaces_job_id) {
        (ScheduleEventKind::Allocated, Some(old)) => Some(replaced(&change, old)),
        _ => None,
    };
    add(jobs, change);
    if let Some(old) = replaced {
        add(jobs, old);
    }
}

/// The job `old` was replaced by `new.job_id`: it names its replacement and is done.
fn replaced<'a>(new: &JobRow<'a>, old: Uuid) -> JobRow<'a> {
    let mut change = JobRow::new(
        new.tenant_id,
        old,
        new.contact_id,
        REPLACED,
        new.state_at,
        new.state_event_id,
    );
    change.reason = new.reason;
    change.reason_detail = new.reason_detail;
    change.replaced_by_job_id = Some(new.job_id);
    change
}

fn launch_command<'a>(jobs: &mut Jobs<'a>, links: &mut Links<'a>, c: &'a LaunchCommand) {
    let mut change = JobRow::new(
        &c.tenant_id,
        c.job_id,
        &c.contact_id,
        DISPATCHING,
        c.occurred_at,
        c.event_id,
    );
    change.campaign_id = Some(&c.campaign_id);
    change.origin = Some(c.origin.as_str());
    change.attempt = Some(c.attempt);
    change.launch_id = Some(c.launch_id);
    add(jobs, change);
    let link = LinkRow::link(&c.tenant_id, c.launch_id, c.job_id, &c.contact_id);
    links.add((&c.tenant_id, c.launch_id), link);
}

fn call_launch<'a>(jobs: &mut Jobs<'a>, links: &mut Links<'a>, l: &'a CallLaunch) {
    let state = match l.status {
        LaunchStatus::Accepted => LAUNCHED,
        LaunchStatus::Ambiguous => AMBIGUOUS,
        LaunchStatus::Failed => FAILED,
        LaunchStatus::Shadow => SHADOW,
        LaunchStatus::Held => HELD,
        LaunchStatus::Unknown => DISPATCHING,
    };
    let mut change = JobRow::new(
        &l.tenant_id,
        l.job_id,
        &l.contact_id,
        state,
        l.occurred_at,
        l.event_id,
    );
    change.campaign_id = Some(&l.campaign_id);
    change.reason = l.reason.as_deref();
    change.reason_detail = l.reason_detail.as_deref();
    change.launch_id = Some(l.launch_id);
    change.provider_call_id = l.provider_call_id.as_deref();
    add(jobs, change);
    let link = LinkRow::link(&l.tenant_id, l.launch_id, l.job_id, &l.contact_id);
    links.add((&l.tenant_id, l.launch_id), link);
}

/// The jobs a contact's state shows held. The contact processor holds a job at its slot
/// (a pause, or calls held for an exception) without any event of its own; its state is
/// the only record of it. A held job is never planned again (it is replaced when the hold
/// lifts, which the scheduler's events show), so taking `held` from any state record that
/// shows it keeps the view's rule that a job never moves backwards.
fn held_jobs<'a>(jobs: &mut Jobs<'a>, c: &'a ContactState) {
    for job in c.jobs.iter().filter(|j| j.state == JobState::Held) {
        let mut change = JobRow::new(
            &c.tenant_id,
            job.job_id,
            &c.contact_id,
            HELD,
            job.updated_at,
            c.event_id,
        );
        change.campaign_id = Some(&job.campaign_id);
        change.reason = Some(&job.reason);
        change.reason_detail = job.reason_detail.as_deref();
        add(jobs, change);
    }
}

/// A final call event of a known launch completes its job (now, or when the launch's job
/// becomes known).
fn call_event<'a>(links: &mut Links<'a>, e: &'a CallEvent) {
    // The gateway leaves `outcome` unknown and sends the raw status: the shared
    // rule maps it, as the processors do, or no live call would ever complete here.
    let outcome = e.mapped_outcome();
    let Some(launch_id) = e.launch_id.filter(|_| outcome.is_final()) else {
        return;
    };
    let completion = LinkRow::completion(
        &e.tenant_id,
        launch_id,
        &e.contact_id,
        e.event_id,
        e.occurred_at,
        outcome.as_str(),
    );
    links.add((&e.tenant_id, launch_id), completion);
}
