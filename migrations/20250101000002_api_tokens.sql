-- Bearer tokens of the operator API. Only the SHA-256 of a token is stored: the
-- plaintext is shown once, by `callstream tokens create`, and cannot be recovered.
-- Not a view: it is not built from the log and never rebuilt.
CREATE TABLE api_tokens (
    token_id    uuid        PRIMARY KEY,
    token_hash  bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    tenant_id   text        NOT NULL,
    role        text        NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    -- Who the token belongs to; becomes the actor id of the commands sent with it.
    subject     text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX api_tokens_by_tenant ON api_tokens (tenant_id);
