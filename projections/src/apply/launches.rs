//! The launches view: every launch with its status, its completion (the platform's own,
//! else the greatest recovered one) and its
//! missing-completion case; and delivery per tenant and 10-minute bucket of acceptance,
//! equal to a count over `launches` at every commit.
//!
//! A batch takes one statement: the upsert of every launch row it changes (the four kinds
//! of event fold into one change per launch, each setting its own columns), and in the
//! same statement the buckets move by what the upsert changed: each changed launch's row
//! as it was before is taken out of its bucket's counts and the row as it is now is put
//! in. A replayed batch changes no row, so it moves no count (idempotent); a bucket costs
//! the same however many launches it holds (a recount would read them all every batch).

use callstream_schemas::{AnyEvent, LaunchStatus, Timestamp};
use sqlx::PgConnection;
use uuid::Uuid;

use super::copy::copy_rows;
use super::fold::{col, first, first_non_null, insert_unnest_with, least, Fold, Merge};
use super::simple::actor_label;
use super::{Located, Write};
use crate::view::Tables;

/// Status ranks: an ambiguous launch is later reconciled to a definite one.
fn status_rank(status: LaunchStatus) -> i16 {
    match status {
        LaunchStatus::Ambiguous | LaunchStatus::Unknown => 1,
        LaunchStatus::Accepted
        | LaunchStatus::Failed
        | LaunchStatus::Shadow
        | LaunchStatus::Held => 2,
    }
}

/// Which completion a launch keeps: the platform's own report over a recovered one (a
/// launch the platform reported counts as delivered, whatever recovery also found), then
/// the greatest `(at, event id)`. The SQL upsert below orders the same way.
fn completion_rank(c: &Completion) -> (bool, Timestamp, Uuid) {
    (c.3 == "live", c.0, c.1)
}

/// The status a launch result gives: `(status, rank, at, event id)`.
type Status<'a> = (&'a str, i16, Timestamp, Uuid);
/// A completion: `(completed_at, event id, outcome, source)`.
type Completion = (Timestamp, Uuid, &'static str, &'static str);
/// A missing-completion case: `(missing_at, event id, deadline_at)`.
type Missing = (Timestamp, Uuid, Timestamp);
/// A resolution: `(resolved_at, event id, resolution, resolved_by)`.
type Resolution = (Timestamp, Uuid, &'static str, String);

/// One change of a launch row; each kind of event fills its own group of columns.
#[derive(Debug, Default)]
struct LaunchRow<'a> {
    tenant_id: &'a str,
    launch_id: Uuid,
    /// Written when the row is created, never changed.
    contact_id: &'a str,
    job_id: Option<Uuid>,
    campaign_id: Option<&'a str>,
    provider: Option<&'a str>,
    provider_call_id: Option<&'a str>,
    /// The greatest `(rank, at, event id)`.
    status: Option<Status<'a>>,
    /// The earliest acceptance; its bucket is the launch's.
    accepted_at: Option<Timestamp>,
    /// The greatest `(at, event id)`.
    completion: Option<Completion>,
    /// The earliest `(at, event id)`: a launch has one window.
    missing: Option<Missing>,
    /// The greatest `(at, event id)`.
    resolution: Option<Resolution>,
}

impl Merge for LaunchRow<'_> {
    fn merge(&mut self, later: Self) {
        first(&mut self.job_id, later.job_id);
        first(&mut self.campaign_id, later.campaign_id);
        first(&mut self.provider, later.provider);
        first(&mut self.provider_call_id, later.provider_call_id);
        if let Some(s) = later.status {
            if self
                .status
                .is_none_or(|m| (s.1, s.2, s.3) > (m.1, m.2, m.3))
            {
                self.status = Some(s);
            }
        }
        self.accepted_at = least(self.accepted_at, later.accepted_at);
        if let Some(c) = later.completion {
            if self
                .completion
                .is_none_or(|m| completion_rank(&c) > completion_rank(&m))
            {
                self.completion = Some(c);
            }
        }
        if let Some(m) = later.missing {
            if self
                .missing
                .is_none_or(|mine| (m.0, m.1) < (mine.0, mine.1))
            {
                self.missing = Some(m);
            }
        }
        if let Some(r) = later.resolution {
            let newer = match &self.resolution {
                Some(mine) => (r.0, r.1) > (mine.0, mine.1),
                None => true,
            };
            if newer {
                self.resolution = Some(r);
            }
        }
    }
}

/// The change one event makes, if any.
fn change(event: &AnyEvent) -> Option<LaunchRow<'_>> {
    let row = match event {
        AnyEvent::CallLaunch(l) => LaunchRow {
            tenant_id: &l.tenant_id,
            launch_id: l.launch_id,
            contact_id: &l.contact_id,
            job_id: Some(l.job_id),
            campaign_id: Some(&l.campaign_id),
            provider: Some(&l.provider),
            provider_call_id: l.provider_call_id.as_deref(),
            status: Some((
                l.status.as_str(),
                status_rank(l.status),
                l.occurred_at,
                l.event_id,
            )),
            accepted_at: (l.status == LaunchStatus::Accepted).then_some(l.occurred_at),
            ..LaunchRow::default()
        },
        AnyEvent::CallEvent(e) => {
            // The gateway leaves `outcome` unknown and sends the raw status: the shared
            // rule maps it, as the processors do, or no live call would ever complete here.
            let outcome = e.mapped_outcome();
            let launch_id = e.launch_id.filter(|_| outcome.is_final())?;
            LaunchRow {
                tenant_id: &e.tenant_id,
                launch_id,
                contact_id: &e.contact_id,
                campaign_id: e.campaign_id.as_deref(),
                completion: Some((
                    e.occurred_at,
                    e.event_id,
                    outcome.as_str(),
                    e.source.as_str(),
                )),
                ..LaunchRow::default()
            }
        }
        AnyEvent::CompletionMissing(m) => LaunchRow {
            tenant_id: &m.tenant_id,
            launch_id: m.launch_id,
            contact_id: &m.contact_id,
            job_id: m.job_id,
            campaign_id: m.campaign_id.as_deref(),
            provider: Some(&m.provider),
            provider_call_id: Some(&m.provider_call_id),
            missing: Some((m.occurred_at, m.event_id, m.deadline_at)),
            ..LaunchRow::default()
        },
        AnyEvent::CompletionResolved(r) => LaunchRow {
            tenant_id: &r.tenant_id,
            launch_id: r.launch_id,
            contact_id: &r.contact_id,
            provider_call_id: r.provider_call_id.as_deref(),
            resolution: Some((
                r.occurred_at,
                r.event_id,
                r.resolution.as_str(),
                actor_label(&r.actor),
            )),
            ..LaunchRow::default()
        },
        _ => return None,
    };
    Some(row)
}

pub(super) async fn apply(
    conn: &mut PgConnection,
    tables: Tables,
    records: &[Located<'_>],
    how: Write,
) -> Result<(), sqlx::Error> {
    let mut fold = Fold::default();
    for record in records {
        if let Some(row) = change(record.event) {
            fold.add((row.tenant_id, row.launch_id), row);
        }
    }
    if fold.is_empty() {
        return Ok(());
    }
    match how {
        Write::Upsert => write(conn, tables, fold.rows()).await,
        Write::Copy => copy(conn, tables, fold.rows()).await,
    }
}

/// `date_bin('10 minutes', at, 'epoch')`: the start of the 10-minute bucket of `at`.
fn bucket_start(at: Timestamp) -> Timestamp {
    const BUCKET_MICROS: i64 = 600_000_000;
    let micros = at.timestamp_micros();
    let start = micros - micros.rem_euclid(BUCKET_MICROS);
    Timestamp::from_timestamp_micros(start).unwrap_or(at)
}

/// Writes launch rows and their delivery counts into tables that hold none of them (see
/// [`Write::Copy`]): each launch with an acceptance counts once in its bucket, as the
/// upsert's moves add up to from empty tables.
async fn copy(
    conn: &mut PgConnection,
    tables: Tables,
    rows: &[LaunchRow<'_>],
) -> Result<(), sqlx::Error> {
    let mut buckets: std::collections::BTreeMap<(&str, Timestamp), [i64; 4]> =
        std::collections::BTreeMap::new();
    for r in rows {
        let Some(start) = r.accepted_at.map(bucket_start) else {
            continue;
        };
        let counts = buckets.entry((r.tenant_id, start)).or_default();
        let source = r.completion.map(|c| c.3);
        counts[0] += 1;
        counts[1] += i64::from(source == Some("live"));
        counts[2] += i64::from(source == Some("recovery"));
        counts[3] += i64::from(r.missing.is_some());
    }
    copy_rows(
        conn,
        &tables.name("launches"),
        &[
            "tenant_id",
            "launch_id",
            "job_id",
            "contact_id",
            "campaign_id",
            "status",
            "status_rank",
            "status_at",
            "status_event_id",
            "provider",
            "provider_call_id",
            "accepted_at",
            "bucket_start",
            "completion_event_id",
            "completed_at",
            "outcome",
            "completion_source",
            "missing_event_id",
            "missing_at",
            "deadline_at",
            "resolution",
            "resolution_event_id",
            "resolved_at",
            "resolved_by",
        ],
        rows,
        |f, r| {
            f.text(Some(r.tenant_id))
                .uuid(Some(r.launch_id))
                .uuid(r.job_id)
                .text(Some(r.contact_id))
                .text(r.campaign_id)
                .text(r.status.map(|s| s.0))
                .int2(r.status.map(|s| s.1))
                .timestamp(r.status.map(|s| s.2))
                .uuid(r.status.map(|s| s.3))
                .text(r.provider)
                .text(r.provider_call_id)
                .timestamp(r.accepted_at)
                .timestamp(r.accepted_at.map(bucket_start))
                .uuid(r.completion.map(|c| c.1))
                .timestamp(r.completion.map(|c| c.0))
                .text(r.completion.map(|c| c.2))
                .text(r.completion.map(|c| c.3))
                .uuid(r.missing.map(|m| m.1))
                .timestamp(r.missing.map(|m| m.0))
                .timestamp(r.missing.map(|m| m.2))
                .text(r.resolution.as_ref().map(|r| r.2))
                .uuid(r.resolution.as_ref().map(|r| r.1))
                .timestamp(r.resolution.as_ref().map(|r| r.0))
                .text(r.resolution.as_ref().map(|r| r.3.as_str()));
        },
    )
    .await?;
    if buckets.is_empty() {
        return Ok(());
    }
    copy_rows(
        conn,
        &tables.name("delivery_buckets"),
        &[
            "tenant_id",
            "bucket_start",
            "accepted",
            "delivered",
            "recovered",
            "missing",
        ],
        buckets,
        |f, ((tenant, start), [accepted, delivered, recovered, missing])| {
            f.text(Some(tenant))
                .timestamp(Some(start))
                .int8(Some(accepted))
                .int8(Some(delivered))
                .int8(Some(recovered))
                .int8(Some(missing));
        },
    )
    .await?;
    Ok(())
}

/// Upserts the batch's launch rows and moves the delivery counts by what changed.
async fn write(
    conn: &mut PgConnection,
    tables: Tables,
    rows: &[LaunchRow<'_>],
) -> Result<(), sqlx::Error> {
    let columns = [
        ("tenant_id", "text"),
        ("launch_id", "uuid"),
        ("job_id", "uuid"),
        ("contact_id", "text"),
        ("campaign_id", "text"),
        ("status", "text"),
        ("status_rank", "int2"),
        ("status_at", "timestamptz"),
        ("status_event_id", "uuid"),
        ("provider", "text"),
        ("provider_call_id", "text"),
        ("accepted_at", "timestamptz"),
        ("completion_event_id", "uuid"),
        ("completed_at", "timestamptz"),
        ("outcome", "text"),
        ("completion_source", "text"),
        ("missing_event_id", "uuid"),
        ("missing_at", "timestamptz"),
        ("deadline_at", "timestamptz"),
        ("resolution", "text"),
        ("resolution_event_id", "uuid"),
        ("resolved_at", "timestamptz"),
        ("resolved_by", "text"),
    ];
    let launches = tables.name("launches");
    let insert = insert_unnest_with(
        &launches,
        &columns,
        &[(
            "bucket_start",
            "date_bin('10 minutes', u.accepted_at, 'epoch'::timestamptz)",
        )],
    );
    // Each group is taken whole when the stored one is NULL or the incoming key wins; an
    // incoming NULL group never wins (the row comparison with NULLs is NULL).
    let take = |cond: &str, cols: &[&str]| {
        cols.iter()
            .map(|c| format!("{c} = CASE WHEN {cond} THEN EXCLUDED.{c} ELSE t.{c} END"))
            .collect::<Vec<_>>()
            .join(",\n             ")
    };
    let status = take(
        "t.status_at IS NULL OR (EXCLUDED.status_rank, EXCLUDED.status_at, EXCLUDED.status_event_id) > (t.status_rank, t.status_at, t.status_event_id)",
        &["status", "status_rank", "status_event_id", "status_at"],
    );
    let completion = take(
        "t.completed_at IS NULL OR (EXCLUDED.completion_source = 'live', EXCLUDED.completed_at, EXCLUDED.completion_event_id) > (t.completion_source = 'live', t.completed_at, t.completion_event_id)",
        &["completion_event_id", "outcome", "completion_source", "completed_at"],
    );
    let missing = take(
        "t.missing_at IS NULL OR (EXCLUDED.missing_at, EXCLUDED.missing_event_id) < (t.missing_at, t.missing_event_id)",
        &["missing_event_id", "deadline_at", "missing_at"],
    );
    let resolution = take(
        "t.resolved_at IS NULL OR (EXCLUDED.resolved_at, EXCLUDED.resolution_event_id) > (t.resolved_at, t.resolution_event_id)",
        &["resolution", "resolved_by", "resolution_event_id", "resolved_at"],
    );
    // All parts of one statement see the rows as they were before it, so `before` reads
    // each launch's old row while `after` writes the new one. Only the columns a bucket
    // counts are compared; a launch whose counted columns did not change moves nothing.
    let sql = format!(
        "WITH after AS (
         {insert}
         ON CONFLICT (tenant_id, launch_id) DO UPDATE SET
             {first},
             {status},
             accepted_at = LEAST(t.accepted_at, EXCLUDED.accepted_at),
             bucket_start = date_bin('10 minutes', LEAST(t.accepted_at, EXCLUDED.accepted_at), 'epoch'::timestamptz),
             {completion},
             {missing},
             {resolution}
         RETURNING tenant_id, launch_id, bucket_start, completion_source, missing_at IS NOT NULL AS missing
         ), before AS (
             SELECT l.tenant_id, l.launch_id, l.bucket_start, l.completion_source, l.missing_at IS NOT NULL AS missing
             FROM {launches} AS l
             JOIN UNNEST($1::text[], $2::uuid[]) AS k(tenant_id, launch_id)
               ON l.tenant_id = k.tenant_id AND l.launch_id = k.launch_id
         ), moved AS (
             SELECT a.tenant_id, a.bucket_start, 1 AS sign, a.completion_source, a.missing
             FROM after AS a LEFT JOIN before AS b USING (tenant_id, launch_id)
             WHERE a.bucket_start IS NOT NULL
               AND (b.bucket_start, b.completion_source, b.missing)
                   IS DISTINCT FROM (a.bucket_start, a.completion_source, a.missing)
             UNION ALL
             SELECT b.tenant_id, b.bucket_start, -1, b.completion_source, b.missing
             FROM before AS b JOIN after AS a USING (tenant_id, launch_id)
             WHERE b.bucket_start IS NOT NULL
               AND (b.bucket_start, b.completion_source, b.missing)
                   IS DISTINCT FROM (a.bucket_start, a.completion_source, a.missing)
         )
         INSERT INTO {delivery} AS d (tenant_id, bucket_start, accepted, delivered, recovered, missing)
         SELECT tenant_id, bucket_start, sum(sign),
                sum(CASE WHEN completion_source = 'live' THEN sign ELSE 0 END),
                sum(CASE WHEN completion_source = 'recovery' THEN sign ELSE 0 END),
                sum(CASE WHEN missing THEN sign ELSE 0 END)
         FROM moved GROUP BY tenant_id, bucket_start
         ON CONFLICT (tenant_id, bucket_start) DO UPDATE SET
             accepted = d.accepted + EXCLUDED.accepted,
             delivered = d.delivered + EXCLUDED.delivered,
             recovered = d.recovered + EXCLUDED.recovered,
             missing = d.missing + EXCLUDED.missing",
        first = first_non_null(&["job_id", "campaign_id", "provider", "provider_call_id"]),
        delivery = tables.name("delivery_buckets"),
    );
    sqlx::query(&sql)
        .bind(col(rows, |r| r.tenant_id))
        .bind(col(rows, |r| r.launch_id))
        .bind(col(rows, |r| r.job_id))
        .bind(col(rows, |r| r.contact_id))
        .bind(col(rows, |r| r.campaign_id))
        .bind(col(rows, |r| r.status.map(|s| s.0)))
        .bind(col(rows, |r| r.status.map(|s| s.1)))
        .bind(col(rows, |r| r.status.map(|s| s.2)))
        .bind(col(rows, |r| r.status.map(|s| s.3)))
        .bind(col(rows, |r| r.provider))
        .bind(col(rows, |r| r.provider_call_id))
        .bind(col(rows, |r| r.accepted_at))
        .bind(col(rows, |r| r.completion.map(|c| c.1)))
        .bind(col(rows, |r| r.completion.map(|c| c.0)))
        .bind(col(rows, |r| r.completion.map(|c| c.2)))
        .bind(col(rows, |r| r.completion.map(|c| c.3)))
        .bind(col(rows, |r| r.missing.map(|m| m.1)))
        .bind(col(rows, |r| r.missing.map(|m| m.0)))
        .bind(col(rows, |r| r.missing.map(|m| m.2)))
        .bind(col(rows, |r| r.resolution.as_ref().map(|r| r.2)))
        .bind(col(rows, |r| r.resolution.as_ref().map(|r| r.1)))
        .bind(col(rows, |r| r.resolution.as_ref().map(|r| r.0)))
        .bind(col(rows, |r| r.resolution.as_ref().map(|r| r.3.as_str())))
        .execute(&mut *conn)
        .await?;
    Ok(())
}
