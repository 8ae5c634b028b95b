-- An optional expiry for operator API tokens: a token past its `expires_at` is refused
-- exactly like an unknown one. NULL is a token that does not expire (every token made
-- before this migration).
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
