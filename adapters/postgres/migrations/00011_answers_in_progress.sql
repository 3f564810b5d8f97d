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

-- +goose Up
ALTER TABLE messages
    ADD COLUMN reply_id text,
    ADD COLUMN idempotency_key text,
    ADD COLUMN request_hash text;

CREATE UNIQUE INDEX messages_idempotency_key_idx ON messages (workspace_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE answers_in_progress (
    reply_id        text        PRIMARY KEY,
    workspace_id    text        NOT NULL,
    conversation_id text        NOT NULL,
    question_id     text        NOT NULL,
    started_at      timestamptz NOT NULL,
    FOREIGN KEY (workspace_id, conversation_id) REFERENCES conversations (workspace_id, id) ON DELETE CASCADE
);

CREATE INDEX answers_in_progress_started_idx ON answers_in_progress (started_at);

-- +goose Down
DROP TABLE answers_in_progress;
DROP INDEX messages_idempotency_key_idx;
ALTER TABLE messages DROP COLUMN reply_id, DROP COLUMN idempotency_key, DROP COLUMN request_hash;
