-- Ownership of the example's payments, kept by handlers/postgres.Ledger.
--
-- A payment belongs to the API client that created it: its API_KEYS
-- identity, or '' for the anonymous client (every payment recorded before
-- this migration is the anonymous client's). Payment ids are the client's
-- own: a payment is keyed by (client, payment_id), so one client's id
-- never names, reads or reveals another client's payment. The side-effect
-- tables carry the client too, to reach their payment and to count one
-- client's rows.

-- +goose Up
ALTER TABLE payments ADD COLUMN client text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE charges ADD COLUMN client text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE notifications ADD COLUMN client text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE receipts ADD COLUMN client text COLLATE "C" NOT NULL DEFAULT '';

-- CASCADE drops the side-effect tables' foreign keys on payment_id alone,
-- whatever a release that created them named them.
ALTER TABLE payments DROP CONSTRAINT payments_pkey CASCADE;
ALTER TABLE payments ADD CONSTRAINT payments_pkey PRIMARY KEY (client, payment_id);

ALTER TABLE charges ADD CONSTRAINT charges_payment_fkey
    FOREIGN KEY (client, payment_id) REFERENCES payments (client, payment_id);
ALTER TABLE notifications ADD CONSTRAINT notifications_payment_fkey
    FOREIGN KEY (client, payment_id) REFERENCES payments (client, payment_id);
ALTER TABLE receipts ADD CONSTRAINT receipts_payment_fkey
    FOREIGN KEY (client, payment_id) REFERENCES payments (client, payment_id);

-- Per-payment counts, and one client's summary.
DROP INDEX IF EXISTS charges_payment_id_idx;
DROP INDEX IF EXISTS notifications_payment_id_idx;
DROP INDEX IF EXISTS receipts_payment_id_idx;
CREATE INDEX charges_payment_idx ON charges (client, payment_id);
CREATE INDEX notifications_payment_idx ON notifications (client, payment_id);
CREATE INDEX receipts_payment_idx ON receipts (client, payment_id);

-- +goose Down
-- Fails, changing nothing, while two clients have payments of one id.
DROP INDEX receipts_payment_idx;
DROP INDEX notifications_payment_idx;
DROP INDEX charges_payment_idx;
ALTER TABLE receipts DROP CONSTRAINT receipts_payment_fkey;
ALTER TABLE notifications DROP CONSTRAINT notifications_payment_fkey;
ALTER TABLE charges DROP CONSTRAINT charges_payment_fkey;
ALTER TABLE payments DROP CONSTRAINT payments_pkey;
ALTER TABLE payments ADD CONSTRAINT payments_pkey PRIMARY KEY (payment_id);
ALTER TABLE charges ADD FOREIGN KEY (payment_id) REFERENCES payments (payment_id);
ALTER TABLE notifications ADD FOREIGN KEY (payment_id) REFERENCES payments (payment_id);
ALTER TABLE receipts ADD FOREIGN KEY (payment_id) REFERENCES payments (payment_id);
CREATE INDEX charges_payment_id_idx ON charges (payment_id);
CREATE INDEX notifications_payment_id_idx ON notifications (payment_id);
CREATE INDEX receipts_payment_id_idx ON receipts (payment_id);
ALTER TABLE receipts DROP COLUMN client;
ALTER TABLE notifications DROP COLUMN client;
ALTER TABLE charges DROP COLUMN client;
ALTER TABLE payments DROP COLUMN client;
