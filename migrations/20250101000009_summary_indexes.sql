-- The console's Today counts held calls by reason and open exceptions by type: with these,
-- each count is an index-only scan of the few rows it counts instead of a read of every
-- such row from the table (126 ms for 50,000 held jobs in `cargo xtask bench console`).
CREATE INDEX jobs_held_by_reason ON jobs (tenant_id, reason) WHERE state = 'held';
CREATE INDEX exceptions_open_by_type ON exceptions (tenant_id, exception_type)
    WHERE status = 'open';
