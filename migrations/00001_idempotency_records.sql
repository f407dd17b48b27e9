-- Idempotency records: one row per key, kept by stores/postgres. This is the
-- rows layout (PG_RECORDS_LAYOUT=rows, the default); see
-- 00001_idempotency_records_partitioned.sql for the other.
--
-- expires_at is the moment the row stops mattering, whatever its state: the
-- lease end of an in-progress record, the TTL end of a completed one. One
-- column makes "is this record live?" the same test in every statement
-- (expires_at > now()) and lets one plain index serve the sweeper, which
-- deletes rows with expires_at <= now() in batches.

-- +goose Up
CREATE TABLE idempotency_records (
    -- Keys are compared only for equality: the C collation keeps the
    -- primary key index byte-ordered and free of locale rules.
    key          text COLLATE "C" PRIMARY KEY,
    state        text        NOT NULL CHECK (state IN ('in_progress', 'completed')),
    -- Fencing token of the current owner; stays set once completed.
    token        text        NOT NULL,
    fingerprint  bytea       NOT NULL,
    -- What Complete stored; NULL while in progress.
    result       bytea,
    created_at   timestamptz NOT NULL,
    completed_at timestamptz,
    expires_at   timestamptz NOT NULL,
    CHECK ((state = 'completed') = (completed_at IS NOT NULL))
)
-- A duplicate Claim rewrites its row unchanged (see stores/postgres claim.go);
-- free space on each page lets that stay a heap-only update.
WITH (fillfactor = 90);

CREATE INDEX idempotency_records_expires_at_idx ON idempotency_records (expires_at);

-- +goose Down
DROP TABLE idempotency_records;
