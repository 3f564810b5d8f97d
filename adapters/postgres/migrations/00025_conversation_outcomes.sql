-- Conversation outcomes (issue 18, item 1): one row per conversation with
-- the outcome the worker decided (domain.DecideOutcome), when it took that
-- value, whether it is final, and when the worker should look again.
--
-- A row exists for every conversation from its start: a trigger inserts it
-- with the conversation, due at once (next_check_at '-infinity'); the
-- worker decides "not yet" and writes back the boundary it named (24 h of
-- quiet). Later events mark the row due again, from triggers on the
-- conversation's row: a message (last_activity_at, message_count), a state
-- change (status, a reopen included), a rating (thumbs_up, thumbs_down,
-- which SetFeedback moves in the same statement as the rating), and a new
-- conversation of the same verified user, which marks that user's
-- unconfirmed resolutions of the last 7 days due (a re-contact). Triggers
-- rather than a line in every write path: the paths that write these
-- columns are many (appends, the answer engine, inbound events, the
-- inbox's take-over, the helpdesk's replies, feedback) and more will come;
-- a path that forgot would leave a stale outcome silently. Each costs one
-- primary key update of a small row, skipped when the row is already due.
-- The worker claims due rows FOR UPDATE SKIP LOCKED; a write whose trigger
-- meets a claimed row waits for that sweep's short transaction and then
-- marks the row due again, so no late event is lost.
--
-- next_check_at is NULL when nothing is scheduled (a final outcome and no
-- event since); the due index holds only rows with a time, so the sweep
-- reads due rows, never the table. Reports group by workspace, agent and
-- decided date (decided_at), hence the second index, on decided rows only.
--
-- Expand-only and safe for running pods: a new table, and triggers whose
-- work older pods never notice. Existing conversations get their rows in
-- batches of a thousand, committing each (hence NO TRANSACTION), due at
-- once; the trigger is created first, so a conversation started during the
-- backfill has its row either way (ON CONFLICT DO NOTHING). Every
-- statement can run again.

-- +goose NO TRANSACTION

-- +goose Up
CREATE TABLE IF NOT EXISTS conversation_outcomes (
    conversation_id text        PRIMARY KEY,
    workspace_id    text        NOT NULL,
    agent_id        text        NOT NULL,
    outcome         text        CHECK (outcome IN ('RESOLVED_CONFIRMED', 'RESOLVED_UNCONFIRMED', 'HANDED_OFF',
                                                   'RESOLVED_BY_PERSON', 'ABANDONED_AFTER_FALLBACK', 'RECONTACT')),
    decided_at      timestamptz,
    final           boolean     NOT NULL DEFAULT false,
    next_check_at   timestamptz,
    CONSTRAINT conversation_outcomes_decided_check CHECK ((outcome IS NULL) = (decided_at IS NULL)),
    CONSTRAINT conversation_outcomes_conversation_fkey FOREIGN KEY (workspace_id, conversation_id)
        REFERENCES conversations (workspace_id, id) ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS conversation_outcomes_due_idx
    ON conversation_outcomes (next_check_at) WHERE next_check_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS conversation_outcomes_decided_idx
    ON conversation_outcomes (workspace_id, agent_id, decided_at) WHERE outcome IS NOT NULL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION conversation_outcomes_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO conversation_outcomes (conversation_id, workspace_id, agent_id, next_check_at)
        VALUES (NEW.id, NEW.workspace_id, NEW.agent_id, '-infinity')
        ON CONFLICT (conversation_id) DO NOTHING;
        IF NEW.verified_user_id IS NOT NULL THEN
            -- 7 days is domain.OutcomeRecontactWindow; marking a few more
            -- rows due than needed only costs a decision that changes nothing.
            UPDATE conversation_outcomes AS o SET next_check_at = '-infinity'
            FROM conversations AS p
            WHERE p.workspace_id = NEW.workspace_id AND p.verified_user_id = NEW.verified_user_id
                AND p.last_activity_at >= NEW.created_at - interval '7 days' AND p.id <> NEW.id
                AND o.conversation_id = p.id AND o.outcome = 'RESOLVED_UNCONFIRMED'
                AND o.next_check_at IS DISTINCT FROM '-infinity';
        END IF;
    ELSE
        UPDATE conversation_outcomes SET next_check_at = '-infinity'
        WHERE conversation_id = NEW.id AND next_check_at IS DISTINCT FROM '-infinity';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS conversation_outcomes_started ON conversations;
CREATE TRIGGER conversation_outcomes_started AFTER INSERT ON conversations
    FOR EACH ROW EXECUTE FUNCTION conversation_outcomes_track();

DROP TRIGGER IF EXISTS conversation_outcomes_changed ON conversations;
CREATE TRIGGER conversation_outcomes_changed
    AFTER UPDATE OF last_activity_at, message_count, status, thumbs_up, thumbs_down ON conversations
    FOR EACH ROW
    WHEN ((OLD.last_activity_at, OLD.message_count, OLD.status, OLD.thumbs_up, OLD.thumbs_down)
        IS DISTINCT FROM (NEW.last_activity_at, NEW.message_count, NEW.status, NEW.thumbs_up, NEW.thumbs_down))
    EXECUTE FUNCTION conversation_outcomes_track();

-- +goose StatementBegin
DO $$
DECLARE
    after_id text := '';
BEGIN
    LOOP
        WITH batch AS (
            SELECT id, workspace_id, agent_id FROM conversations
            WHERE id > after_id ORDER BY id LIMIT 1000
        ), added AS (
            INSERT INTO conversation_outcomes (conversation_id, workspace_id, agent_id, next_check_at)
            SELECT id, workspace_id, agent_id, '-infinity' FROM batch
            ON CONFLICT (conversation_id) DO NOTHING
        )
        SELECT id INTO after_id FROM batch ORDER BY id DESC LIMIT 1;
        EXIT WHEN NOT FOUND;
        COMMIT;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS conversation_outcomes_changed ON conversations;
DROP TRIGGER IF EXISTS conversation_outcomes_started ON conversations;
DROP FUNCTION IF EXISTS conversation_outcomes_track();
DROP TABLE IF EXISTS conversation_outcomes;
