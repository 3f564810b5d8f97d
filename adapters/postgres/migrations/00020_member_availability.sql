-- Member availability (issue 17): a member says they are available to
-- answer visitors, or away. The widget tells visitors when nobody is.
--
-- ADD COLUMN with a constant default is a catalog change on PostgreSQL 11
-- and later: no row is rewritten, and the lock is held for a moment only.
-- Everyone starts away: nobody promised to answer before this existed.
--
-- The partial index serves "is anyone available in this workspace?", asked
-- by every widget that opens its handoff form; it holds only the available
-- rows, so it stays small. It is built CONCURRENTLY, so NO TRANSACTION,
-- and dropped first in case an earlier build failed and left an invalid
-- index. Every statement can run again.

-- +goose NO TRANSACTION

-- +goose Up
ALTER TABLE memberships ADD COLUMN IF NOT EXISTS available boolean NOT NULL DEFAULT false;
DROP INDEX CONCURRENTLY IF EXISTS memberships_available_idx;
CREATE INDEX CONCURRENTLY memberships_available_idx ON memberships (workspace_id) WHERE available;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS memberships_available_idx;
ALTER TABLE memberships DROP COLUMN IF EXISTS available;
