-- Effect keys of the example's side effects, kept by handlers/postgres.Ledger.
--
-- A charge, notification or receipt appended in a receiver's run carries
-- the run's effect key (middleware.EffectKey): the same for every
-- delivery, retry and takeover of one message in one handler. Unique per
-- table, it makes a run that is repeated (in lease mode, after a failure or
-- a crash between the effect and its record) append nothing: the ledger
-- inserts with ON CONFLICT (effect_key) DO NOTHING, and the row of the
-- first run stands. A row appended outside a run, or with the keys taken
-- away, has none: NULLs are distinct, so such appends add a row each time,
-- and the tables still have no unique constraint on the payment.

-- +goose Up
ALTER TABLE charges ADD COLUMN effect_key text COLLATE "C";
ALTER TABLE notifications ADD COLUMN effect_key text COLLATE "C";
ALTER TABLE receipts ADD COLUMN effect_key text COLLATE "C";
ALTER TABLE charges ADD CONSTRAINT charges_effect_key_key UNIQUE (effect_key);
ALTER TABLE notifications ADD CONSTRAINT notifications_effect_key_key UNIQUE (effect_key);
ALTER TABLE receipts ADD CONSTRAINT receipts_effect_key_key UNIQUE (effect_key);

-- +goose Down
-- Dropping a column drops its constraint.
ALTER TABLE receipts DROP COLUMN effect_key;
ALTER TABLE notifications DROP COLUMN effect_key;
ALTER TABLE charges DROP COLUMN effect_key;
