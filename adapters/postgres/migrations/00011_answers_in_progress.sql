-- Answers that cannot be lost or duplicated (issue 13).
--
-- reply_id links a question to the reply the engine writes for it, so a
-- retried request finds the answer it already got. idempotency_key (scoped
-- by the caller: the API workspace, or one session) and request_hash make a
-- chat request with an Idempotency-Key answer once; the partial index holds
-- only keyed questions, so unkeyed turns pay nothing for it.
--
-- answers_in_progress holds, while an answer streams, the reply a stored
-- question awaits. The question's insert adds the row and the reply's
-- removes it, in the same statements, so the table holds only the answers
-- being generated right now (a handful of rows). A row older than the chat
-- time limit is an answer whose pod died: the worker's sweeper stores its
-- outcome and ends its live streams.

-- Safe while older pods run: it only adds (nullable columns without a
-- default, which PostgreSQL adds without rewriting the table; a table; an
-- index). The unique index is built CONCURRENTLY, outside a transaction, so
-- building it over a large messages table never blocks the chat's writes;
-- every statement can run again, so a migration stopped half-way is simply
-- run again (the index is dropped first: a CONCURRENTLY build that failed
-- leaves an invalid one behind). The migrate command's advisory lock still
-- keeps two pods from running it at once.

-- +goose NO TRANSACTION

-- +goose Up
ALTER TABLE messages
    ADD COLUMN IF NOT EXISTS reply_id text,
    ADD COLUMN IF NOT EXISTS idempotency_key text,
    ADD COLUMN IF NOT EXISTS request_hash text;

CREATE TABLE IF NOT EXISTS answers_in_progress (
    reply_id        text        PRIMARY KEY,
    workspace_id    text        NOT NULL,
    conversation_id text        NOT NULL,
    question_id     text        NOT NULL,
    started_at      timestamptz NOT NULL,
    FOREIGN KEY (workspace_id, conversation_id) REFERENCES conversations (workspace_id, id) ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS answers_in_progress_started_idx ON answers_in_progress (started_at);

DROP INDEX CONCURRENTLY IF EXISTS messages_idempotency_key_idx;

CREATE UNIQUE INDEX CONCURRENTLY messages_idempotency_key_idx ON messages (workspace_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS messages_idempotency_key_idx;
DROP TABLE IF EXISTS answers_in_progress;
ALTER TABLE messages DROP COLUMN IF EXISTS reply_id, DROP COLUMN IF EXISTS idempotency_key, DROP COLUMN IF EXISTS request_hash;
