-- When a conversation last asked for a person (issue 17): "Needs a person"
-- lists HANDOFF_REQUESTED conversations oldest request first, with how long
-- each has waited. Ordering by last activity, as before, let a visitor who
-- kept typing drop down the queue.
--
-- handoff_requested_at is set on every entry to HANDOFF_REQUESTED, in the
-- same conditional write as the move (adapters/postgres/status_change.go),
-- and kept afterwards so a thread can say when the handoff was asked for.
-- A conversation handed off again after being resolved waits from the new
-- request.
--
-- Rollout: pods of the previous release keep running while this applies,
-- and their move does not name the column. Two triggers stamp it for them:
-- before an update that moves a row into HANDOFF_REQUESTED without
-- changing the column, and before an insert of a HANDOFF_REQUESTED row
-- without it. Both stamp the row's own last_activity_at: the move's write
-- sets that to the time of its notice, so it is the app's clock, the one
-- the new code uses. The WHEN conditions are evaluated without calling the
-- function, so the hot updates (every message touches its conversation)
-- pay a comparison, not a PL/pgSQL call. The CHECK then holds the rule for
-- every writer: no HANDOFF_REQUESTED row without the time, so the needs
-- view's keyset never meets a NULL. COALESCE in the reads would not do: a
-- conversation handed off again by an old pod would keep its earlier
-- request's time.
--
-- The backfill gives rows already waiting the time of their last move's
-- SYSTEM notice (messages.status is the state a notice entered), else
-- their last activity. Waiting conversations are a sliver of the table.
--
-- ADD COLUMN without a default is a catalog change. The CHECK is added NOT
-- VALID (a moment's lock), then validated under a lock that lets reads and
-- writes go on. The index is partial, in the view's keyset order, built
-- CONCURRENTLY (hence NO TRANSACTION) and dropped first in case an earlier
-- build failed. Every statement can run again.

-- +goose NO TRANSACTION

-- +goose Up
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS handoff_requested_at timestamptz;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION conversations_stamp_handoff_requested() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.handoff_requested_at := NEW.last_activity_at;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS conversations_handoff_requested_update ON conversations;
CREATE TRIGGER conversations_handoff_requested_update
    BEFORE UPDATE ON conversations FOR EACH ROW
    WHEN (NEW.status = 'HANDOFF_REQUESTED' AND OLD.status <> 'HANDOFF_REQUESTED'
        AND NEW.handoff_requested_at IS NOT DISTINCT FROM OLD.handoff_requested_at)
    EXECUTE FUNCTION conversations_stamp_handoff_requested();

DROP TRIGGER IF EXISTS conversations_handoff_requested_insert ON conversations;
CREATE TRIGGER conversations_handoff_requested_insert
    BEFORE INSERT ON conversations FOR EACH ROW
    WHEN (NEW.status = 'HANDOFF_REQUESTED' AND NEW.handoff_requested_at IS NULL)
    EXECUTE FUNCTION conversations_stamp_handoff_requested();

UPDATE conversations AS c SET handoff_requested_at = COALESCE(
    (SELECT max(m.created_at) FROM messages AS m
        WHERE m.conversation_id = c.id AND m.role = 'SYSTEM' AND m.status = 'HANDOFF_REQUESTED'),
    c.last_activity_at)
WHERE c.status = 'HANDOFF_REQUESTED' AND c.handoff_requested_at IS NULL;

ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_handoff_requested_at_check;
ALTER TABLE conversations ADD CONSTRAINT conversations_handoff_requested_at_check
    CHECK (status <> 'HANDOFF_REQUESTED' OR handoff_requested_at IS NOT NULL) NOT VALID;
ALTER TABLE conversations VALIDATE CONSTRAINT conversations_handoff_requested_at_check;

DROP INDEX CONCURRENTLY IF EXISTS conversations_needs_handoff_idx;
CREATE INDEX CONCURRENTLY conversations_needs_handoff_idx
    ON conversations (workspace_id, handoff_requested_at, id)
    WHERE status = 'HANDOFF_REQUESTED';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS conversations_needs_handoff_idx;
ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_handoff_requested_at_check;
DROP TRIGGER IF EXISTS conversations_handoff_requested_insert ON conversations;
DROP TRIGGER IF EXISTS conversations_handoff_requested_update ON conversations;
DROP FUNCTION IF EXISTS conversations_stamp_handoff_requested();
ALTER TABLE conversations DROP COLUMN IF EXISTS handoff_requested_at;
