-- Who an exception is assigned to: the latest `exception.assign` audit event of an operator
-- per exception (an assignee of NULL is unassigned). Apart from `exceptions`, so an
-- assignment read before its exception (another topic) is kept all the same; the API reads
-- the two joined.
CREATE TABLE exception_assignments (
    tenant_id    text        NOT NULL,
    exception_id uuid        NOT NULL,
    assignee     text,
    assigned_at  timestamptz NOT NULL,
    assigned_by  text        NOT NULL,
    event_id     uuid        NOT NULL,
    PRIMARY KEY (tenant_id, exception_id)
);
