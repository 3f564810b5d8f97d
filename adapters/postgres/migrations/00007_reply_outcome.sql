-- How an ASSISTANT reply came about, stored with it, so a stream resumed
-- from PostgreSQL replays its done event exactly (isFallback,
-- fallbackReason, offerHandoff) and the history can show it.

-- +goose Up
ALTER TABLE messages
    -- Why the reply is the agent's fallback message; '' when it is not one.
    ADD COLUMN fallback_reason text NOT NULL DEFAULT '',
    -- Whether the reply offered a person.
    ADD COLUMN offer_handoff boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE messages DROP COLUMN fallback_reason, DROP COLUMN offer_handoff;
