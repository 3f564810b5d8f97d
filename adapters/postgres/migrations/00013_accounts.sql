-- People who sign in to the console, their workspace memberships, console
-- sessions, invitations and password resets (issue 16). Secrets are never
-- stored: session tokens and link tokens are kept as SHA-256 hashes, and
-- passwords as argon2id PHC strings.

-- +goose Up
CREATE TABLE users (
    id            text        PRIMARY KEY,
    -- Normalised (trimmed, lowercase) by the application before it gets here.
    email         text        NOT NULL UNIQUE,
    name          text        NOT NULL,
    password_hash text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);

CREATE TABLE memberships (
    workspace_id text        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role         text        NOT NULL CHECK (role IN ('owner', 'admin', 'agent')),
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);

-- A user's workspaces (the primary key serves a workspace's members).
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE console_sessions (
    id           text        PRIMARY KEY,
    user_id      text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash   text        NOT NULL UNIQUE,
    csrf_token   text        NOT NULL,
    ip           text        NOT NULL DEFAULT '',
    user_agent   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);

CREATE INDEX console_sessions_user_idx ON console_sessions (user_id, last_seen_at DESC);
-- For sweeping sessions past their absolute end.
CREATE INDEX console_sessions_expires_idx ON console_sessions (expires_at);

CREATE TABLE invitations (
    id           text        PRIMARY KEY,
    workspace_id text        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email        text        NOT NULL,
    role         text        NOT NULL CHECK (role IN ('owner', 'admin', 'agent')),
    -- NULL when the operator invited; kept when the inviter leaves.
    invited_by   text        REFERENCES users (id) ON DELETE SET NULL,
    token_hash   text        NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    accepted_at  timestamptz
);

-- One pending invitation per address and workspace: inviting again replaces it.
CREATE UNIQUE INDEX invitations_pending_key ON invitations (workspace_id, email) WHERE accepted_at IS NULL;

CREATE TABLE password_resets (
    id         text        PRIMARY KEY,
    user_id    text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash text        NOT NULL UNIQUE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

CREATE INDEX password_resets_user_idx ON password_resets (user_id);

-- +goose Down
DROP TABLE password_resets;
DROP TABLE invitations;
DROP TABLE console_sessions;
DROP TABLE memberships;
DROP TABLE users;
