-- The timeline keeps each event as it was written: the API returns it whole and nothing
-- searches inside it, so `json` (kept as text, only checked on the way in) is enough, and
-- every insert is spared jsonb's conversion into its binary form.
ALTER TABLE contact_timeline ALTER COLUMN event TYPE json USING event::json;
