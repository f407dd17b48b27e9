-- +goose Up
CREATE TABLE recorded_orders (
    id       bigserial PRIMARY KEY,
    order_id text      NOT NULL,
    item     text      NOT NULL
);

-- +goose Down
DROP TABLE recorded_orders;
