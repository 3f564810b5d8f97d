-- Questions a language model wrote for each chunk at index time (issue 14:
-- a passage is found by the questions it answers, in the customer's words,
-- not only by its own). Off unless the deployment sets
-- CONCIERGE_INDEX_QUESTIONS; then the index job stores them with the chunk.
--
-- chunks.questions holds them one per line (a question is one line), so the
-- generated search vector can read them as text: array_to_string is not
-- immutable and cannot be used in a generated column. They weigh like the
-- heading (A). chunks.questions_by names the writer (model, questions per
-- chunk, prompt version), so a re-index reuses what the same writer wrote
-- for the same text (chunks_questions_idx) instead of paying the model again;
-- it stays '' when no writer answered, so a later index asks again.
-- sources.questions_by is the writer of the source's last indexing: the
-- sweeper re-indexes sources written by another writer, as it does for
-- another embedder.
--
-- Replacing the generated column rewrites chunks and rebuilds its GIN
-- index once: minutes on millions of chunks, during which the table is locked.

-- +goose Up
ALTER TABLE chunks
    ADD COLUMN questions    text NOT NULL DEFAULT '',
    ADD COLUMN questions_by text NOT NULL DEFAULT '';
ALTER TABLE chunks DROP COLUMN search;
ALTER TABLE chunks ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english'::regconfig, heading), 'A') ||
    setweight(to_tsvector('english'::regconfig, question), 'A') ||
    setweight(to_tsvector('english'::regconfig, questions), 'A') ||
    setweight(to_tsvector('english'::regconfig, content), 'B')
) STORED;
CREATE INDEX chunks_search_idx ON chunks USING gin (search);
CREATE INDEX chunks_questions_idx ON chunks (workspace_id, questions_by, content_hash) WHERE questions_by <> '';
ALTER TABLE sources ADD COLUMN questions_by text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE sources DROP COLUMN questions_by;
DROP INDEX chunks_questions_idx;
ALTER TABLE chunks DROP COLUMN search;
ALTER TABLE chunks ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english'::regconfig, heading), 'A') ||
    setweight(to_tsvector('english'::regconfig, question), 'A') ||
    setweight(to_tsvector('english'::regconfig, content), 'B')
) STORED;
CREATE INDEX chunks_search_idx ON chunks USING gin (search);
ALTER TABLE chunks DROP COLUMN questions, DROP COLUMN questions_by;
