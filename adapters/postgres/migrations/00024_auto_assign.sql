-- Auto-assignment (issue 17): a workspace may have every handed-off
-- conversation given to one of its available members, the one with the
-- fewest open conversations, and among equals the one auto-assigned least
-- recently. Off by default: nobody asked for it before this existed.
--
-- memberships.last_auto_assigned_at is when the member was last given a
-- conversation this way, the round robin's turn; NULL (never) comes first.
-- Manual assignments do not stamp it: they already count in the member's
-- open conversations, which is the first rule.
--
-- ADD COLUMN with a constant default (or none) is a catalog change on
-- PostgreSQL 11 and later: no row is rewritten, and the lock is held for a
-- moment only. The open conversations per assignee are counted on the
-- partial index conversations_open_assignee_activity_idx of 00021, so no
-- index is added. Every statement can run again.

-- +goose Up
ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS auto_assign boolean NOT NULL DEFAULT false;
ALTER TABLE memberships ADD COLUMN IF NOT EXISTS last_auto_assigned_at timestamptz;

-- +goose Down
ALTER TABLE memberships DROP COLUMN IF EXISTS last_auto_assigned_at;
ALTER TABLE workspaces DROP COLUMN IF EXISTS auto_assign;
