-- The chat widget (issue 6): service-wide widget addresses and visitors'
-- feedback on answers.
--
-- Agent slugs are unique only within a workspace, but /chat/{slug} is
-- service-wide. The first agent to take a slug claims the address
-- (widget_slug = slug) and keeps it until it is deleted; an agent created
-- while another holds it keeps widget_slug NULL and lives at /chat/{id}.
-- The unique constraint decides races between pods. Existing agents are
-- backfilled in creation (seq) order, so the oldest keeps the address.

-- +goose Up
ALTER TABLE agents ADD COLUMN widget_slug text CHECK (widget_slug = slug);
UPDATE agents AS a SET widget_slug = a.slug
WHERE a.seq = (SELECT min(b.seq) FROM agents AS b WHERE b.slug = a.slug);
ALTER TABLE agents ADD CONSTRAINT agents_widget_slug_key UNIQUE (widget_slug);

ALTER TABLE messages
    -- A visitor's rating of an ASSISTANT message; NULL when none (or cleared).
    ADD COLUMN feedback_rating  text CHECK (feedback_rating IN ('up', 'down')),
    ADD COLUMN feedback_comment text NOT NULL DEFAULT '',
    ADD COLUMN feedback_at      timestamptz,
    ADD CONSTRAINT messages_feedback_check CHECK ((feedback_rating IS NULL) = (feedback_at IS NULL));

-- The feedback list, newest rating first: only rated answers are indexed,
-- a small part of all messages. Filters by rating and agent are applied
-- while walking it (the agent through the message's conversation).
CREATE INDEX messages_feedback_idx ON messages (workspace_id, feedback_at DESC, id DESC)
    WHERE feedback_rating IS NOT NULL;

-- +goose Down
DROP INDEX messages_feedback_idx;
ALTER TABLE messages DROP CONSTRAINT messages_feedback_check,
    DROP COLUMN feedback_rating, DROP COLUMN feedback_comment, DROP COLUMN feedback_at;
ALTER TABLE agents DROP CONSTRAINT agents_widget_slug_key;
ALTER TABLE agents DROP COLUMN widget_slug;
