-- dead letters: every record a processor could not handle (from the `dead-letters` topic),
-- what failed, where and why, with the bytes needed to replay it, and whether an operator
-- replayed it (from the audit event `dead_letter.replay`, in `dead_letter_replays`). The tenant is the record's own
-- when its value is a callstream event; '' when it is not (bytes no schema reads), which
-- no token can see.
CREATE TABLE dead_letters (
    tenant_id       text        NOT NULL,
    letter_id       uuid        NOT NULL,
    topic           text        NOT NULL,
    partition       integer     NOT NULL,
    kafka_offset    bigint      NOT NULL,
    dead_at         timestamptz NOT NULL,
    app             text,
    -- record, timer or effect
    kind            text,
    -- topic/partition/offset of the record that failed (or the timer's or effect's name)
    source          text,
    reason          text,
    event_type      text,
    event_id        uuid,
    contact_id      text,
    record_key      bytea,
    payload         bytea,
    -- the original record's headers (name -> value as text), without the dlq-* ones
    headers         jsonb       NOT NULL,
    PRIMARY KEY (tenant_id, letter_id)
);
CREATE INDEX dead_letters_by_time ON dead_letters (tenant_id, dead_at, letter_id);

-- The latest replay of each letter (apart, so a replay read before its letter is kept).
CREATE TABLE dead_letter_replays (
    tenant_id   text        NOT NULL,
    letter_id   uuid        NOT NULL,
    replayed_at timestamptz NOT NULL,
    replayed_by text        NOT NULL,
    event_id    uuid        NOT NULL,
    PRIMARY KEY (tenant_id, letter_id)
);
