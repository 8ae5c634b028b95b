-- The missing-completions list shows each case's recovery attempts (its `recovery.lookup`
-- audits) and what the latest found: this index finds them per launch without reading the
-- rest of the audit table.
CREATE INDEX audit_recovery_lookups ON audit (tenant_id, subject_id, occurred_at)
    WHERE action = 'recovery.lookup';
