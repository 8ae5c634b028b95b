-- Jobs still to come (requested, scheduled, due, held), in planned order: the console's
-- Schedule and `GET /v1/jobs?active=true` read a page of them without sorting every job.
-- The predicate matches `ACTIVE_JOBS_PREDICATE` in the operator API word for word.
CREATE INDEX jobs_active ON jobs (tenant_id, planned_at, job_id)
    WHERE state IN ('requested', 'scheduled', 'due', 'held');
