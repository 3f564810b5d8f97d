-- Live relay, human handoff and outbound deliveries.
--
-- Every event a live stream carries is anchored to a stored message, so a
-- client resuming after the short-lived Redis stream expired is replayed
-- from here: an answer's tokens from token_ends, a status change from its
-- SYSTEM notice. Handoffs and outbound events are written to the outbox in
-- the same transaction as the change they report, and delivered by workers.

-- +goose Up
ALTER TABLE messages
    -- ASSISTANT replies: the byte offset in content where each streamed token
    -- ended, in order; token i (seq i) is content[token_ends[i-1]:token_ends[i]].
    ADD COLUMN token_ends  integer[],
    -- SYSTEM notices of a status change: the state entered.
    ADD COLUMN status      text CHECK (status IN ('AI', 'HANDOFF_REQUESTED', 'HUMAN', 'RESOLVED')),
    -- HUMAN replies: the person's display name.
    ADD COLUMN author_name text NOT NULL DEFAULT '';

ALTER TABLE conversations
    -- Who asked for a person (the handoff form), for the helpdesk.
    ADD COLUMN contact_name  text NOT NULL DEFAULT '',
    ADD COLUMN contact_email text NOT NULL DEFAULT '';

ALTER TABLE workspaces
    -- Where handoffs go: '' is the built-in inbox (the v2 API), else a URL
    -- that receives signed webhooks.
    ADD COLUMN helpdesk_url   text NOT NULL DEFAULT '',
    -- Where outbound events go; '' sends none.
    ADD COLUMN events_url     text NOT NULL DEFAULT '',
    -- The Standard Webhooks signing secret ("whsec_" + base64) for both.
    ADD COLUMN signing_secret text NOT NULL DEFAULT '';

-- One row per thing to deliver: a handoff (or a message of a handed-off
-- conversation) to the helpdesk, or an outbound event. The id is the
-- idempotency key the receiver sees (webhook-id), the same on every attempt.
CREATE TABLE outbox (
    id              text        PRIMARY KEY,
    workspace_id    text        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    target          text        NOT NULL CHECK (target IN ('helpdesk', 'events')),
    event_type      text        NOT NULL,
    conversation_id text        NOT NULL DEFAULT '',
    -- The body as it was when the change happened, so every attempt sends
    -- the same thing.
    payload         jsonb       NOT NULL,
    status          text        NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL,
    last_error      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    delivered_at    timestamptz
);

-- The sweeper's scan: pending rows due for an attempt.
CREATE INDEX outbox_due_idx ON outbox (next_attempt_at) WHERE status = 'PENDING';
-- The delivery list of a workspace, newest first.
CREATE INDEX outbox_workspace_created_idx ON outbox (workspace_id, created_at DESC, id DESC);

-- The delivery log: one row per attempt.
CREATE TABLE delivery_attempts (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    outbox_id   text        NOT NULL REFERENCES outbox (id) ON DELETE CASCADE,
    attempt     integer     NOT NULL CHECK (attempt >= 1),
    at          timestamptz NOT NULL,
    status_code integer     NOT NULL DEFAULT 0,
    error       text        NOT NULL DEFAULT '',
    duration_ms integer     NOT NULL DEFAULT 0,
    UNIQUE (outbox_id, attempt)
);

-- +goose Down
DROP TABLE delivery_attempts;
DROP TABLE outbox;
ALTER TABLE workspaces DROP COLUMN helpdesk_url, DROP COLUMN events_url, DROP COLUMN signing_secret;
ALTER TABLE conversations DROP COLUMN contact_name, DROP COLUMN contact_email;
ALTER TABLE messages DROP COLUMN token_ends, DROP COLUMN status, DROP COLUMN author_name;
