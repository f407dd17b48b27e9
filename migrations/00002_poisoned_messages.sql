-- Poisoned messages: one row per parked message, kept by poison/postgres.
-- The same in both layouts of version 1.
--
-- id is the message's ID (as a decimal string) and its order: Parks are
-- serialised by an advisory lock, so ids also increase in commit order and
-- a page read with a cursor never misses a message committed after it.
-- size is Message.Size(), what the row counts against the byte bound.
-- A row parked longer ago than the retention is invisible to the store and
-- deleted by a later Park, whatever its state.

-- +goose Up
CREATE TABLE poisoned_messages (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid       text        NOT NULL,
    topic      text        NOT NULL,
    handler    text        NOT NULL,
    reason     text        NOT NULL,
    class      text        NOT NULL,
    idem_key   text        NOT NULL,
    metadata   jsonb       NOT NULL,
    payload    bytea       NOT NULL,
    size       bigint      NOT NULL CHECK (size >= 0),
    parked_at  timestamptz NOT NULL,
    state      text        NOT NULL CHECK (state IN ('parked', 'redriven', 'discarded')),
    settled_by text,
    settled_at timestamptz,
    CHECK ((state = 'parked') = (settled_at IS NULL))
);

-- Listing, newest first by id: by state (the default lists parked ones),
-- and by handler or class within a state. Every state at once reads the
-- primary key.
CREATE INDEX poisoned_messages_state_id_idx ON poisoned_messages (state, id);
CREATE INDEX poisoned_messages_handler_state_id_idx ON poisoned_messages (handler, state, id);
CREATE INDEX poisoned_messages_class_state_id_idx ON poisoned_messages (class, state, id);

-- Retention, and the bounds: deleting rows parked before the cutoff, and
-- counting and summing the sizes of the rest, read this index alone.
CREATE INDEX poisoned_messages_parked_at_idx ON poisoned_messages (parked_at) INCLUDE (size);

-- +goose Down
DROP TABLE poisoned_messages;
