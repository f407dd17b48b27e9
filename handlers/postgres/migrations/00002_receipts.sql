-- Receipts of the example payments domain, kept by handlers/postgres.Ledger:
-- one row per execution of the issue_receipt handler. Like charges, it
-- deliberately has NO unique constraint on payment_id or charge_id: only the
-- idempotent receiver keeps a payment from getting two receipts, and tests
-- count the rows to prove it.

-- IF NOT EXISTS: a database whose tables an older release created with
-- the records' migrations (version 2 and 3 of goose_db_version) adopts
-- them as they are.

-- +goose Up
CREATE TABLE IF NOT EXISTS receipts (
    id           bigserial   PRIMARY KEY,
    payment_id   text COLLATE "C" NOT NULL REFERENCES payments (payment_id),
    customer_id  text        NOT NULL,
    amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
    currency     text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    charge_id    text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Not unique, on purpose (see above); serves per-payment counts.
CREATE INDEX IF NOT EXISTS receipts_payment_id_idx ON receipts (payment_id);

-- +goose Down
DROP TABLE receipts;
