-- Conversation filters by fallback and rating, and text search (issue 16).
--
-- Counters on conversations say, without reading messages, whether some
-- answer was the agent's fallback (fallback_count) and how its answers were
-- rated (thumbs_up, thumbs_down). The statements that append messages
-- (appendSQL, StartConversation) and record feedback (SetFeedback) keep them,
-- in the same statement, so a filter costs what the status filter does: a
-- walk of an index in the list's (last_activity_at, id) order. The partial
-- indexes hold only conversations with a fallback or a rating, so a rare
-- filter ("rated down") reads its own small index instead of skipping
-- through every conversation; "no fallback", the common case, walks the
-- activity index.
--
-- Text search uses pg_trgm (trusted, shipped with PostgreSQL's contrib):
-- a search box is expected to find part of a word, an email's domain or a
-- name's first letters ("lovel", "acme.com"), in any language, which
-- trigrams do and full-text search (whole words, one language's stemmer)
-- does not. Its GIN indexes answer ILIKE '%...%' for queries of three
-- characters or more (core/conversation refuses shorter ones). SYSTEM
-- notices are boilerplate and left out of the messages' index. The
-- contacts' index is not partial, though most conversations have no
-- contact (a blank has no trigrams, so costs the index nearly nothing):
-- ANALYZE keeps statistics on a plain expression index, without which the
-- planner took a contact search matching 10,000 of 100,000 conversations
-- for one matching 2 and sorted them all (scale test: 40 ms a page with a
-- partial index, 2.4 ms without, walking the list's order).
--
-- Safe on large live tables: ADD COLUMN with a constant default changes no
-- row; the backfill updates conversations a thousand at a time, committing
-- each batch, so no row stays locked for long; the indexes are built
-- CONCURRENTLY (hence NO TRANSACTION: goose runs each statement alone).
-- Every statement can run again; an index whose CONCURRENTLY build failed
-- is dropped first. The backfill sets exact counts from the messages, so
-- running it again after a rollout corrects anything older pods (which do
-- not keep the counters) appended meanwhile.

-- +goose NO TRANSACTION

-- +goose Up
CREATE EXTENSION IF NOT EXISTS pg_trgm;

ALTER TABLE conversations
    ADD COLUMN IF NOT EXISTS fallback_count integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS thumbs_up integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS thumbs_down integer NOT NULL DEFAULT 0;

-- +goose StatementBegin
DO $$
DECLARE
    after_workspace text := '';
    after_id text := '';
BEGIN
    LOOP
        WITH batch AS (
            SELECT workspace_id, id FROM conversations
            WHERE (workspace_id, id) > (after_workspace, after_id)
            ORDER BY workspace_id, id
            LIMIT 1000
        ), counted AS (
            UPDATE conversations AS c SET fallback_count = n.fallbacks, thumbs_up = n.ups, thumbs_down = n.downs
            FROM batch AS b, LATERAL (
                SELECT count(*) FILTER (WHERE m.fallback_reason <> '') AS fallbacks,
                    count(*) FILTER (WHERE m.feedback_rating = 'up') AS ups,
                    count(*) FILTER (WHERE m.feedback_rating = 'down') AS downs
                FROM messages AS m
                WHERE m.conversation_id = b.id AND m.workspace_id = b.workspace_id AND m.role = 'ASSISTANT'
            ) AS n
            WHERE c.workspace_id = b.workspace_id AND c.id = b.id
                AND (c.fallback_count, c.thumbs_up, c.thumbs_down) IS DISTINCT FROM (n.fallbacks, n.ups, n.downs)
        )
        SELECT workspace_id, id INTO after_workspace, after_id
        FROM batch ORDER BY workspace_id DESC, id DESC LIMIT 1;
        EXIT WHEN NOT FOUND;
        COMMIT;
    END LOOP;
END
$$;
-- +goose StatementEnd

DROP INDEX CONCURRENTLY IF EXISTS conversations_fallback_activity_idx;
CREATE INDEX CONCURRENTLY conversations_fallback_activity_idx
    ON conversations (workspace_id, last_activity_at DESC, id DESC) WHERE fallback_count > 0;

DROP INDEX CONCURRENTLY IF EXISTS conversations_thumbs_up_activity_idx;
CREATE INDEX CONCURRENTLY conversations_thumbs_up_activity_idx
    ON conversations (workspace_id, last_activity_at DESC, id DESC) WHERE thumbs_up > 0;

DROP INDEX CONCURRENTLY IF EXISTS conversations_thumbs_down_activity_idx;
CREATE INDEX CONCURRENTLY conversations_thumbs_down_activity_idx
    ON conversations (workspace_id, last_activity_at DESC, id DESC) WHERE thumbs_down > 0;

DROP INDEX CONCURRENTLY IF EXISTS conversations_contact_trgm_idx;
CREATE INDEX CONCURRENTLY conversations_contact_trgm_idx
    ON conversations USING gin ((contact_name || ' ' || contact_email) gin_trgm_ops);

DROP INDEX CONCURRENTLY IF EXISTS messages_content_trgm_idx;
CREATE INDEX CONCURRENTLY messages_content_trgm_idx
    ON messages USING gin (content gin_trgm_ops) WHERE role <> 'SYSTEM';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS messages_content_trgm_idx;
DROP INDEX CONCURRENTLY IF EXISTS conversations_contact_trgm_idx;
DROP INDEX CONCURRENTLY IF EXISTS conversations_thumbs_down_activity_idx;
DROP INDEX CONCURRENTLY IF EXISTS conversations_thumbs_up_activity_idx;
DROP INDEX CONCURRENTLY IF EXISTS conversations_fallback_activity_idx;
ALTER TABLE conversations
    DROP COLUMN IF EXISTS fallback_count,
    DROP COLUMN IF EXISTS thumbs_up,
    DROP COLUMN IF EXISTS thumbs_down;
