-- Unanswered questions grouped into topics, and the Q&A sources the team
-- wrote for them (issue 18, items 3 and 4).
--
-- unanswered_questions gets a row for each visitor question the agent
-- failed on, per reason, from triggers on messages, whatever path wrote
-- them (the answer engine, the helpdesk, the inbox, feedback): the
-- ASSISTANT answer was a fallback (any reason but HUMAN_ACTIVE), it was
-- rated down, or the conversation was handed to people (a SYSTEM message
-- HANDOFF_REQUESTED or HUMAN). The question is the latest USER message
-- before that answer or state change (messages_conversation_seq_idx: one
-- index probe). Playground conversations are left out. Each trigger fires
-- only on its rows (WHEN), so a normal message costs a comparison.
--
-- The worker claims ungrouped rows (topic_id NULL, a partial index) FOR
-- UPDATE SKIP LOCKED and assigns each to the most similar open topic of
-- its agent among the most recently active ones (the open index), or a
-- new topic; the topic keeps its counts, reasons and term profile, so
-- lists read topics, never questions or messages.
--
-- unanswered_topic_sources links a Q&A source written from a topic or
-- from one answer to the conversations and messages it came from.
--
-- Expand-only and safe for running pods: new tables, and triggers whose
-- work older pods never notice. Questions before this migration are not
-- backfilled (that would read every message once): topics start with the
-- release.

-- +goose Up
CREATE TABLE unanswered_topics (
    id               text        PRIMARY KEY,
    workspace_id     text        NOT NULL,
    agent_id         text        NOT NULL,
    label            text        NOT NULL,
    label_score      double precision NOT NULL DEFAULT 0,
    terms            jsonb       NOT NULL DEFAULT '{}',
    question_count   integer     NOT NULL DEFAULT 0 CHECK (question_count >= 0),
    fallback_count   integer     NOT NULL DEFAULT 0 CHECK (fallback_count >= 0),
    rated_down_count integer     NOT NULL DEFAULT 0 CHECK (rated_down_count >= 0),
    handed_off_count integer     NOT NULL DEFAULT 0 CHECK (handed_off_count >= 0),
    first_seen_at    timestamptz NOT NULL,
    last_seen_at     timestamptz NOT NULL,
    status           text        NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'ADDRESSED')),
    -- A deleted source leaves the topic addressed, without its source.
    source_id        text        REFERENCES sources (id) ON DELETE SET NULL,
    addressed_at     timestamptz,
    CONSTRAINT unanswered_topics_addressed_check CHECK ((status = 'ADDRESSED') = (addressed_at IS NOT NULL)),
    CONSTRAINT unanswered_topics_workspace_id_key UNIQUE (workspace_id, id),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, id) ON DELETE CASCADE
);

-- Grouping's candidates: an agent's open topics, most recently active first.
CREATE INDEX unanswered_topics_open_idx ON unanswered_topics (agent_id, last_seen_at DESC, id DESC) WHERE status = 'OPEN';
-- The lists, newest activity or most questions first.
CREATE INDEX unanswered_topics_recent_idx ON unanswered_topics (workspace_id, agent_id, last_seen_at DESC, id DESC);
CREATE INDEX unanswered_topics_largest_idx ON unanswered_topics (workspace_id, agent_id, question_count DESC, id DESC);

CREATE TABLE unanswered_questions (
    message_id      text        NOT NULL,
    reason          text        NOT NULL CHECK (reason IN ('FALLBACK', 'RATED_DOWN', 'HANDED_OFF')),
    workspace_id    text        NOT NULL,
    agent_id        text        NOT NULL,
    conversation_id text        NOT NULL,
    question        text        NOT NULL,
    asked_at        timestamptz NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    topic_id        text        REFERENCES unanswered_topics (id) ON DELETE CASCADE,
    PRIMARY KEY (message_id, reason),
    FOREIGN KEY (workspace_id, conversation_id) REFERENCES conversations (workspace_id, id) ON DELETE CASCADE
);

CREATE INDEX unanswered_questions_pending_idx ON unanswered_questions (recorded_at) WHERE topic_id IS NULL;
CREATE INDEX unanswered_questions_topic_idx ON unanswered_questions (topic_id, asked_at DESC, message_id);

CREATE TABLE unanswered_topic_sources (
    source_id       text        NOT NULL,
    workspace_id    text        NOT NULL,
    -- topic_id is NULL for a source written from one answer of a thread
    -- whose question was in no topic.
    topic_id        text        REFERENCES unanswered_topics (id) ON DELETE CASCADE,
    conversation_id text        NOT NULL,
    message_id      text        NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (source_id, message_id),
    FOREIGN KEY (source_id) REFERENCES sources (id) ON DELETE CASCADE,
    FOREIGN KEY (workspace_id, conversation_id) REFERENCES conversations (workspace_id, id) ON DELETE CASCADE
);

CREATE INDEX unanswered_topic_sources_topic_idx ON unanswered_topic_sources (topic_id) WHERE topic_id IS NOT NULL;
CREATE INDEX unanswered_topic_sources_conversation_idx ON unanswered_topic_sources (conversation_id);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION unanswered_questions_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    why text;
BEGIN
    IF NEW.role = 'ASSISTANT' AND TG_OP = 'UPDATE' THEN
        why := 'RATED_DOWN';
    ELSIF NEW.role = 'ASSISTANT' THEN
        why := 'FALLBACK';
    ELSE
        why := 'HANDED_OFF';
    END IF;
    INSERT INTO unanswered_questions (message_id, reason, workspace_id, agent_id, conversation_id, question, asked_at)
    SELECT q.id, why, c.workspace_id, c.agent_id, c.id, q.content, q.created_at
    FROM conversations AS c
    CROSS JOIN LATERAL (
        SELECT m.id, m.content, m.created_at FROM messages AS m
        WHERE m.conversation_id = NEW.conversation_id AND m.seq < NEW.seq AND m.role = 'USER'
        ORDER BY m.seq DESC LIMIT 1
    ) AS q
    WHERE c.id = NEW.conversation_id AND c.workspace_id = NEW.workspace_id AND c.channel <> 'PLAYGROUND'
    ON CONFLICT (message_id, reason) DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER unanswered_questions_fallback AFTER INSERT ON messages
    FOR EACH ROW WHEN (NEW.role = 'ASSISTANT' AND NEW.fallback_reason <> '' AND NEW.fallback_reason <> 'HUMAN_ACTIVE')
    EXECUTE FUNCTION unanswered_questions_track();
CREATE TRIGGER unanswered_questions_handoff AFTER INSERT ON messages
    FOR EACH ROW WHEN (NEW.role = 'SYSTEM' AND NEW.status IN ('HANDOFF_REQUESTED', 'HUMAN'))
    EXECUTE FUNCTION unanswered_questions_track();
CREATE TRIGGER unanswered_questions_rated_down AFTER UPDATE OF feedback_rating ON messages
    FOR EACH ROW WHEN (NEW.role = 'ASSISTANT' AND NEW.feedback_rating = 'down' AND OLD.feedback_rating IS DISTINCT FROM 'down')
    EXECUTE FUNCTION unanswered_questions_track();

-- +goose Down
DROP TRIGGER IF EXISTS unanswered_questions_rated_down ON messages;
DROP TRIGGER IF EXISTS unanswered_questions_handoff ON messages;
DROP TRIGGER IF EXISTS unanswered_questions_fallback ON messages;
DROP FUNCTION IF EXISTS unanswered_questions_track();
DROP TABLE IF EXISTS unanswered_topic_sources;
DROP TABLE IF EXISTS unanswered_questions;
DROP TABLE IF EXISTS unanswered_topics;
