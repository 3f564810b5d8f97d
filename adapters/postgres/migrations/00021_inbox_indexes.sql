-- The human inbox (issue 17): indexes for its views and the thread's
-- earlier conversations of a verified user.
--
-- The open views (all open, unassigned, mine) hold conversations a person
-- handles, HANDOFF_REQUESTED or HUMAN, newest activity first. Partial
-- indexes on exactly that predicate keep them small (open conversations
-- are a sliver of a workspace's history) and in the keyset order, so a
-- page and each tab's capped count read about a page of entries however
-- many conversations were resolved before. "Mine" has its own, by
-- assignee: the plain assignee index of 00017 would walk the member's
-- every resolved conversation too. "Needs a person" and "Resolved" use the
-- status index of 00001 (needs reads it backwards, oldest first).
--
-- A thread shows the latest conversations of the same verified user; most
-- conversations have none, so that index is partial too.
--
-- Built CONCURRENTLY (hence NO TRANSACTION), each dropped first in case an
-- earlier build failed and left an invalid index. Every statement can run
-- again.

-- +goose NO TRANSACTION

-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS conversations_open_activity_idx;
CREATE INDEX CONCURRENTLY conversations_open_activity_idx
    ON conversations (workspace_id, last_activity_at DESC, id DESC)
    WHERE status IN ('HANDOFF_REQUESTED', 'HUMAN');

DROP INDEX CONCURRENTLY IF EXISTS conversations_open_assignee_activity_idx;
CREATE INDEX CONCURRENTLY conversations_open_assignee_activity_idx
    ON conversations (workspace_id, assignee_id, last_activity_at DESC, id DESC)
    WHERE status IN ('HANDOFF_REQUESTED', 'HUMAN');

DROP INDEX CONCURRENTLY IF EXISTS conversations_verified_user_activity_idx;
CREATE INDEX CONCURRENTLY conversations_verified_user_activity_idx
    ON conversations (workspace_id, verified_user_id, last_activity_at DESC, id DESC)
    WHERE verified_user_id IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS conversations_verified_user_activity_idx;
DROP INDEX CONCURRENTLY IF EXISTS conversations_open_assignee_activity_idx;
DROP INDEX CONCURRENTLY IF EXISTS conversations_open_activity_idx;
