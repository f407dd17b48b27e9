-- Charges of the test domain's provider, kept by its postgresBook: one row
-- per charge made. Its Idempotency-Key records (the records' migrations,
-- applied first) keep a repeated request from adding one; a request
-- without a key adds one every time, and ref is not unique, so that
-- counting rows and distinct refs shows a double.

-- +goose Up
CREATE TABLE testprovider_charges (
    id      text COLLATE "C" PRIMARY KEY,
    ref     text COLLATE "C" NOT NULL,
    amount  bigint      NOT NULL CHECK (amount > 0),
    made_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE testprovider_charges;
