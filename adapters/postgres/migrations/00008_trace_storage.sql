-- The retrieval trace is written with every answer (about 5 KB of JSON for
-- its 20 candidates) and read whole, only when someone asks why an answer
-- said what it said. As jsonb it was parsed and converted on every write,
-- and, being over the TOAST threshold, compressed with pglz: together most
-- of what PostgreSQL spent storing an answer (pgbench on the chat turn's
-- statement: 1,655-2,113 turns/s with it, 2,611-3,404 with no trace).
-- Stored as json (kept as text, only checked) and compressed with lz4, it
-- costs close to nothing (2,900-3,257 turns/s in the same runs). Nothing
-- queries inside traces, so nothing is lost.
--
-- Changing the type rewrites the table, under an exclusive lock; on a large
-- messages table run this migration in a quiet hour.

-- +goose Up
ALTER TABLE messages ALTER COLUMN trace TYPE json USING trace::json;
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE messages ALTER COLUMN trace SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    -- A server built without lz4 keeps pglz: slower, still correct.
    RAISE NOTICE 'lz4 is not available; messages.trace stays compressed with pglz';
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE messages ALTER COLUMN trace SET COMPRESSION default;
ALTER TABLE messages ALTER COLUMN trace TYPE jsonb USING trace::jsonb;
