-- Saved replies per workspace (issue 17): canned answers agents insert in
-- the composer by typing "/" and a shortcut.
--
-- A new table, so creating it locks nothing that is in use. The shortcut is
-- collated "C": shortcuts are ASCII (lowercase letters, digits, "-"), and
-- with byte order the unique index serves both the list's shortcut order
-- and the composer's prefix lookup (LIKE 'abc%'), which under a linguistic
-- collation it would not. created_by names the user who wrote the reply;
-- deleting the user keeps the reply and forgets the author (SET NULL).

-- +goose Up
CREATE TABLE saved_replies (
    id           text        PRIMARY KEY,
    workspace_id text        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    shortcut     text        COLLATE "C" NOT NULL,
    title        text        NOT NULL,
    body         text        NOT NULL,
    created_by   text        REFERENCES users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    CONSTRAINT saved_replies_workspace_shortcut_key UNIQUE (workspace_id, shortcut)
);

-- Deleting a user sets its replies' created_by to NULL; this index spares
-- that delete a scan of every workspace's replies.
CREATE INDEX saved_replies_created_by_idx ON saved_replies (created_by) WHERE created_by IS NOT NULL;

-- +goose Down
DROP TABLE saved_replies;
