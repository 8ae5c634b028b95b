-- The projections' views of the event log, and the offsets they have consumed.
--
-- Rules every view table follows, so that `callstream projections rebuild` can copy a
-- table with `CREATE TABLE x__rebuild (LIKE x INCLUDING ALL)` and rename it into place:
--   * no sequences or serial columns (a LIKE copy would share the sequence, and dropping
--     the old table would take it away): rows are keyed by ids from the events;
--   * no foreign keys between view tables (each view is dropped and rebuilt on its own);
--   * tenant_id on every row and first in every index, so every query the API makes is
--     tenant-scoped and served by an index.
-- Every row is a pure function of the set of events consumed, whatever order the topics
-- were interleaved in: merges are "keep the greatest (rank, time, event id)" or
-- "first non-null", so a rebuilt view equals the live one.

-- Where each view has got to: the next offset to apply, per physical topic and partition.
-- Written in the same transaction as the rows a batch changes (exactly once into Postgres).
CREATE TABLE projection_offsets (
    projection   text        NOT NULL,
    topic        text        NOT NULL,
    partition    integer     NOT NULL,
    next_offset  bigint      NOT NULL CHECK (next_offset >= 0),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (projection, topic, partition)
);

-- jobs: every planned call, its state and why, and its lineage.
CREATE TABLE jobs (
    tenant_id          text        NOT NULL,
    job_id             uuid        NOT NULL,
    contact_id         text        NOT NULL,
    campaign_id        text,
    origin             text,
    attempt            integer,
    -- requested, scheduled, due, dispatching, launched, ambiguous, completed, failed,
    -- shadow, refused, cancelled, replaced
    state              text        NOT NULL,
    state_rank         smallint    NOT NULL,
    state_at           timestamptz NOT NULL,
    state_event_id     uuid        NOT NULL,
    reason             text,
    reason_detail      text,
    plan_reason        text,
    outcome            text,
    earliest_at        timestamptz,
    requested_at       timestamptz,
    slot               bigint,
    slot_at            timestamptz,
    -- The sort key of the API: when the call is planned, else when it was first seen.
    planned_at         timestamptz NOT NULL GENERATED ALWAYS AS (COALESCE(slot_at, earliest_at, created_at)) STORED,
    time_zone          text,
    time_zone_source   text,
    replaces_job_id    uuid,
    replaced_by_job_id uuid,
    launch_id          uuid,
    provider_call_id   text,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, job_id)
);
CREATE INDEX jobs_by_state ON jobs (tenant_id, state, planned_at, job_id);
CREATE INDEX jobs_by_planned ON jobs (tenant_id, planned_at, job_id);
CREATE INDEX jobs_by_contact ON jobs (tenant_id, contact_id, planned_at, job_id);
CREATE INDEX jobs_by_campaign ON jobs (tenant_id, campaign_id, planned_at, job_id);

-- The jobs view's own launch -> job map and each launch's first completion, so a
-- completion read before its launch still reaches the job.
CREATE TABLE job_launches (
    tenant_id           text        NOT NULL,
    launch_id           uuid        NOT NULL,
    job_id              uuid,
    completion_event_id uuid,
    completion_at       timestamptz,
    outcome             text,
    PRIMARY KEY (tenant_id, launch_id)
);

-- exceptions: cases that need a person, open, resolved or ignored, and who closed them.
CREATE TABLE exceptions (
    tenant_id       text        NOT NULL,
    exception_id    uuid        NOT NULL,
    exception_type  text        NOT NULL,
    status          text        NOT NULL,
    status_rank     smallint    NOT NULL,
    status_at       timestamptz NOT NULL,
    status_event_id uuid        NOT NULL,
    urgent          boolean     NOT NULL,
    contact_id      text        NOT NULL,
    campaign_id     text,
    job_id          uuid,
    launch_id       uuid,
    call_id         text,
    operation_id    uuid,
    reason          text        NOT NULL,
    detail          text,
    assignee        text,
    opened_at       timestamptz,
    opened_by       text,
    resolved_at     timestamptz,
    resolved_by     text,
    first_seen_at   timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, exception_id)
);
CREATE INDEX exceptions_by_status ON exceptions (tenant_id, status, first_seen_at, exception_id);
CREATE INDEX exceptions_by_time ON exceptions (tenant_id, first_seen_at, exception_id);

-- slots: one row per job booked into a slot of the grid; a cancelled booking frees it.
CREATE TABLE slots (
    tenant_id   text        NOT NULL,
    slot        bigint      NOT NULL,
    job_id      uuid        NOT NULL,
    slot_at     timestamptz,
    contact_id  text        NOT NULL,
    campaign_id text,
    allocated   boolean     NOT NULL DEFAULT false,
    cancelled   boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, slot, job_id)
);
CREATE INDEX slots_by_time ON slots (tenant_id, slot_at, slot);
CREATE INDEX slots_by_job ON slots (tenant_id, job_id);

-- launches: every launch, accepted or not, its first completion, and the missing case.
CREATE TABLE launches (
    tenant_id           text        NOT NULL,
    launch_id           uuid        NOT NULL,
    job_id              uuid,
    contact_id          text        NOT NULL,
    campaign_id         text,
    -- accepted, failed, ambiguous, shadow
    status              text,
    status_rank         smallint,
    status_at           timestamptz,
    status_event_id     uuid,
    provider            text,
    provider_call_id    text,
    accepted_at         timestamptz,
    bucket_start        timestamptz,
    completion_event_id uuid,
    completed_at        timestamptz,
    outcome             text,
    completion_source   text,
    missing_event_id    uuid,
    missing_at          timestamptz,
    deadline_at         timestamptz,
    resolution          text,
    resolution_event_id uuid,
    resolved_at         timestamptz,
    resolved_by         text,
    PRIMARY KEY (tenant_id, launch_id)
);
CREATE INDEX launches_by_bucket ON launches (tenant_id, bucket_start);
CREATE INDEX launches_missing ON launches (tenant_id, missing_at, launch_id)
    WHERE missing_at IS NOT NULL AND resolution IS NULL;

-- delivery: per tenant and 10-minute bucket of acceptance, launches against completions
-- the platform delivered itself (recovered ones are counted apart). Recomputed from
-- `launches` for every bucket a batch touches, so it is idempotent.
CREATE TABLE delivery_buckets (
    tenant_id      text        NOT NULL,
    bucket_start   timestamptz NOT NULL,
    accepted       bigint      NOT NULL,
    delivered      bigint      NOT NULL,
    recovered      bigint      NOT NULL,
    missing        bigint      NOT NULL,
    PRIMARY KEY (tenant_id, bucket_start)
);

-- audit: every operator and system action.
CREATE TABLE audit (
    tenant_id    text        NOT NULL,
    event_id     uuid        NOT NULL,
    occurred_at  timestamptz NOT NULL,
    actor_kind   text        NOT NULL,
    actor_id     text        NOT NULL,
    action       text        NOT NULL,
    subject_type text        NOT NULL,
    subject_id   text        NOT NULL,
    contact_id   text,
    command_id   uuid,
    result       text        NOT NULL,
    reason       text,
    detail       text,
    PRIMARY KEY (tenant_id, event_id)
);
CREATE INDEX audit_by_time ON audit (tenant_id, occurred_at, event_id);

-- contact timeline: every event about a contact, with its reason and causation.
CREATE TABLE contact_timeline (
    tenant_id      text        NOT NULL,
    event_id       uuid        NOT NULL,
    contact_id     text        NOT NULL,
    occurred_at    timestamptz NOT NULL,
    event_type     text        NOT NULL,
    what           text,
    reason         text,
    causation_id   uuid,
    correlation_id uuid,
    topic          text        NOT NULL,
    partition      integer     NOT NULL,
    kafka_offset   bigint      NOT NULL,
    event          jsonb       NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);
CREATE INDEX contact_timeline_by_contact
    ON contact_timeline (tenant_id, contact_id, occurred_at, event_id);

-- control: the current runtime settings (the latest change per tenant, setting, campaign).
CREATE TABLE control_settings (
    tenant_id   text        NOT NULL,
    setting     text        NOT NULL,
    -- '' for settings that are not campaign-scoped, so the key has no NULL.
    campaign_id text        NOT NULL,
    enabled     boolean,
    value       jsonb       NOT NULL,
    event_id    uuid        NOT NULL,
    changed_at  timestamptz NOT NULL,
    actor_kind  text        NOT NULL,
    actor_id    text        NOT NULL,
    reason      text,
    PRIMARY KEY (tenant_id, setting, campaign_id)
);

-- commands: operator commands and whether they were applied or rejected.
CREATE TABLE commands (
    tenant_id       text        NOT NULL,
    command_id      uuid        NOT NULL,
    kind            text,
    contact_id      text,
    actor_id        text,
    requested_at    timestamptz,
    target          jsonb,
    -- pending, applied, rejected
    status          text        NOT NULL,
    status_rank     smallint    NOT NULL,
    status_at       timestamptz NOT NULL,
    status_event_id uuid        NOT NULL,
    reason          text,
    PRIMARY KEY (tenant_id, command_id)
);
CREATE INDEX commands_by_time ON commands (tenant_id, requested_at, command_id);
