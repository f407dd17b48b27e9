-- Charges of the payments example's payment provider, kept by
-- handlers/provider: one row per charge it made. The provider's own
-- Idempotency-Key records (the records' migrations, applied before these)
-- keep a repeated request from adding a row; a request without a key adds
-- one every time.

-- +goose Up
CREATE TABLE provider_charges (
    charge_id    text COLLATE "C" PRIMARY KEY,
    payment_id   text COLLATE "C" NOT NULL,
    customer_id  text        NOT NULL,
    amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
    currency     text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    created_at   timestamptz NOT NULL
);

-- Not unique, on purpose: serves per-payment counts, which show a payment
-- charged twice.
CREATE INDEX provider_charges_payment_idx ON provider_charges (payment_id);

-- +goose Down
DROP TABLE provider_charges;
