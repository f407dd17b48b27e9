-- The test domain's ledger, kept by testdomain.PostgresLedger: one row per
-- effect of a step of its flow (kind), for the request of id.
--
-- effect_key is the effect key of the receiver's run that added the row.
-- Unique, it makes a repeated run add nothing (INSERT ... ON CONFLICT
-- (effect_key) DO NOTHING); a row added outside a run has none, and NULLs
-- are distinct, so such rows add up. Nothing is unique per id, on purpose:
-- the tests count rows and distinct ids to show a double.

-- +goose Up
CREATE TABLE testdomain_ledger (
    seq        bigserial   PRIMARY KEY,
    kind       text        NOT NULL CHECK (kind IN ('request', 'charge', 'notice', 'receipt')),
    id         text COLLATE "C" NOT NULL,
    effect_key text COLLATE "C" UNIQUE,
    added_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX testdomain_ledger_id_idx ON testdomain_ledger (id);

-- +goose Down
DROP TABLE testdomain_ledger;
