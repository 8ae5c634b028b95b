-- How many records each view has taken from each partition (applied, or skipped as not
-- an event), written in the same transaction as the offsets: with exactly-once, it equals
-- the number of records in the partition below `next_offset`, however often the
-- projections were killed. Tests and operators compare it with the topics.
ALTER TABLE projection_offsets ADD COLUMN records bigint NOT NULL DEFAULT 0;
