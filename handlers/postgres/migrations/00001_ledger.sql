-- Ledger of the example payments domain, kept by handlers/postgres.Ledger.
--
-- payments holds one row per payment and its furthest status. charges and
-- notifications are append-only logs of side effects: charges stands for a
-- card being charged, so it deliberately has NO unique constraint on
-- payment_id. Only the idempotent receiver keeps a payment from being charged
-- twice, and tests count the rows to prove it.

-- IF NOT EXISTS: a database whose tables an older release created with
-- the records' migrations (version 2 and 3 of goose_db_version) adopts
-- them as they are.

-- +goose Up
CREATE TABLE IF NOT EXISTS payments (
    payment_id   text COLLATE "C" PRIMARY KEY,
    customer_id  text        NOT NULL,
    amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
    currency     text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    -- Moves forward only: accepted -> charged -> notified.
    status       text        NOT NULL CHECK (status IN ('accepted', 'charged', 'notified')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS charges (
    id           bigserial   PRIMARY KEY,
    payment_id   text COLLATE "C" NOT NULL REFERENCES payments (payment_id),
    amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
    currency     text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    charge_id    text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Not unique, on purpose (see above); serves per-payment counts.
CREATE INDEX IF NOT EXISTS charges_payment_id_idx ON charges (payment_id);

CREATE TABLE IF NOT EXISTS notifications (
    id          bigserial   PRIMARY KEY,
    payment_id  text COLLATE "C" NOT NULL REFERENCES payments (payment_id),
    customer_id text        NOT NULL,
    charge_id   text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS notifications_payment_id_idx ON notifications (payment_id);

-- +goose Down
DROP TABLE notifications;
DROP TABLE charges;
DROP TABLE payments;
