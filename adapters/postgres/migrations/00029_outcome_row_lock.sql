-- A conversation's events lock its conversation_outcomes row (fixes a lost
-- re-check found under load: a report counted 3 conversations and 0
-- handoffs).
--
-- The outcome and facts sweeps claim due rows FOR UPDATE SKIP LOCKED and
-- then read the conversation's messages. Before this migration the trigger
-- on conversations left a row alone when it was already due, so a write
-- (a handoff, a message, a rating) that committed while a sweep ran could
-- be missed both ways: the sweep read a snapshot taken before the write
-- committed, and cleared the row's dueness after it; nothing marked it due
-- again, and the report or outcome stayed stale until the conversation
-- changed once more.
--
-- Now every event locks the row (FOR NO KEY UPDATE: a lock, not a new row
-- version, when the row is already due). Together with the sweeps, which
-- claim rows in one statement and read the messages in the next (a fresh
-- snapshot; adapters/postgres/outcome.go and report.go), every interleaving
-- ends right:
--   - the event holds the lock while its transaction is open, so a sweep's
--     claim skips the row, and a later sweep reads the committed event;
--   - an event that committed before the claim is seen by the claim's
--     next statement;
--   - a sweep that claimed first makes the event wait for its commit, and
--     the event then marks the row due again (the sweep cleared it).
-- The same goes for a new conversation of a verified user, which marks
-- that user's recent conversations due: the UPDATE no longer skips rows
-- already due, so it waits for a sweep holding one.
--
-- The function is replaced in place: safe for running pods, whose sweeps
-- (one statement) are no worse off than before.

-- +goose Up
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
                AND o.conversation_id = p.id AND o.outcome = 'RESOLVED_UNCONFIRMED';
        END IF;
    ELSE
        PERFORM 1 FROM conversation_outcomes WHERE conversation_id = NEW.id FOR NO KEY UPDATE;
        UPDATE conversation_outcomes SET next_check_at = '-infinity', facts_due = true
        WHERE conversation_id = NEW.id AND (next_check_at IS DISTINCT FROM '-infinity' OR NOT facts_due);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION conversation_outcomes_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO conversation_outcomes (conversation_id, workspace_id, agent_id, next_check_at)
        VALUES (NEW.id, NEW.workspace_id, NEW.agent_id, '-infinity')
        ON CONFLICT (conversation_id) DO NOTHING;
        IF NEW.verified_user_id IS NOT NULL THEN
            UPDATE conversation_outcomes AS o SET next_check_at = '-infinity'
            FROM conversations AS p
            WHERE p.workspace_id = NEW.workspace_id AND p.verified_user_id = NEW.verified_user_id
                AND p.last_activity_at >= NEW.created_at - interval '7 days' AND p.id <> NEW.id
                AND o.conversation_id = p.id AND o.outcome = 'RESOLVED_UNCONFIRMED'
                AND o.next_check_at IS DISTINCT FROM '-infinity';
        END IF;
    ELSE
        UPDATE conversation_outcomes SET next_check_at = '-infinity', facts_due = true
        WHERE conversation_id = NEW.id AND (next_check_at IS DISTINCT FROM '-infinity' OR NOT facts_due);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
