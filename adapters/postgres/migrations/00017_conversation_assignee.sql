-- Conversation ownership (issue 17): the member who answers a conversation.
--
-- assignee_id is nullable with no default, so adding it changes no row (a
-- catalog change only). The foreign key to users sets it back to NULL when
-- a user is deleted; removing a member from a workspace, which deletes no
-- user, unassigns in the same transaction (adapters/postgres/account.go).
-- The key is added NOT VALID (a moment's lock, no row read), then
-- VALIDATE CONSTRAINT reads the table under a lock that lets reads and
-- writes go on. Every row is NULL at that point, so validation finds
-- nothing to refuse.
--
-- The index serves the list's assignee filter in its keyset order, as the
-- agent and status indexes do; it is built CONCURRENTLY, so NO
-- TRANSACTION, and dropped first in case an earlier build failed and left
-- an invalid index. Every statement can run again.

-- +goose NO TRANSACTION

-- +goose Up
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS assignee_id text;
ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_assignee_fkey;
ALTER TABLE conversations ADD CONSTRAINT conversations_assignee_fkey
    FOREIGN KEY (assignee_id) REFERENCES users (id) ON DELETE SET NULL NOT VALID;
ALTER TABLE conversations VALIDATE CONSTRAINT conversations_assignee_fkey;
DROP INDEX CONCURRENTLY IF EXISTS conversations_assignee_activity_idx;
CREATE INDEX CONCURRENTLY conversations_assignee_activity_idx
    ON conversations (workspace_id, assignee_id, last_activity_at DESC, id DESC);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS conversations_assignee_activity_idx;
ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_assignee_fkey;
ALTER TABLE conversations DROP COLUMN IF EXISTS assignee_id;
