-- Idempotency records in the partitioned layout (PG_RECORDS_LAYOUT=partitioned):
-- the same table name and columns as 00001_idempotency_records.sql, which
-- is the rows layout, but partitioned by range of created_at so that
-- retention drops whole partitions instead of deleting rows. Up applies
-- this file or the other as version 1, never both (see migrations.go).
--
-- PostgreSQL enforces a unique key across partitions only when it holds the
-- partition key, so the primary key is (key, created_at) and "one record
-- per key" is kept by stores/postgres instead: every Claim serialises on a
-- transaction advisory lock of its key and moves an expired record into
-- the current partition by deleting it and inserting the new one (see
-- stores/postgres claim_partitioned.go). created_at is the clock time of
-- that insert, so a row never lands in a partition whose range is over.
--
-- stores/postgres creates the partitions ahead of time and drops one once
-- every record in it has expired. This file creates the first: from the
-- current hour (UTC) for one day, so a store works before its first pass.

-- +goose Up
CREATE TABLE idempotency_records (
    -- Keys are compared only for equality: the C collation keeps the
    -- primary key index byte-ordered and free of locale rules.
    key          text COLLATE "C" NOT NULL,
    state        text        NOT NULL CHECK (state IN ('in_progress', 'completed')),
    -- Fencing token of the current owner; stays set once completed.
    token        text        NOT NULL,
    fingerprint  bytea       NOT NULL,
    -- What Complete stored; NULL while in progress.
    result       bytea,
    created_at   timestamptz NOT NULL,
    completed_at timestamptz,
    expires_at   timestamptz NOT NULL,
    CHECK ((state = 'completed') = (completed_at IS NOT NULL)),
    PRIMARY KEY (key, created_at)
) PARTITION BY RANGE (created_at);

-- Serves the retention's max(expires_at) of a partition.
CREATE INDEX idempotency_records_expires_at_idx ON idempotency_records (expires_at);

-- +goose StatementBegin
DO $$
DECLARE
    lo timestamptz := date_trunc('hour', now(), 'UTC');
BEGIN
    EXECUTE format('CREATE TABLE %I PARTITION OF idempotency_records FOR VALUES FROM (%L) TO (%L)',
        'idempotency_records_' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD"_"HH24MISS'), lo, lo + interval '1 day');
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE idempotency_records;
