-- Report rollups (issue 18): what each conversation contributes to the
-- reports (conversation_facts), and per (workspace, day, agent) sums of
-- those contributions (report_days), which a report adds up instead
-- of reading messages. docs/outcomes.md, section "Reports", defines every
-- figure.
--
-- messages.model names the model that wrote an ASSISTANT reply (its tokens
-- are already in tokens_in and tokens_out); NULL for older rows and for
-- replies no model wrote (a fallback said without asking one).
--
-- Dueness rides on conversation_outcomes: facts_due marks a conversation
-- whose facts need recomputing. The outcome trigger (replaced below) sets
-- it together with next_check_at on every event, and a trigger on
-- conversation_outcomes sets it whenever the outcome changes (a decision
-- the 24 h or 7 day boundary made, with no event). The column's constant
-- default makes every existing conversation due, which is the backfill;
-- the worker works it off in batches. Separate from next_check_at so that
-- pods of the previous release, whose outcome sweep clears next_check_at
-- but knows nothing of facts, cannot clear it.
--
-- A conversation's facts are recomputed whole, and the difference between
-- its new and old contribution (report_fact_metrics) is added to its day's
-- counts in the same statement (RollUpDueFacts). Deleting a conversation
-- (alone, or with its agent or workspace) deletes its facts, and a trigger
-- subtracts them from the counters. Playground conversations have no facts.
--
-- Expand-only and safe for running pods: a nullable column, a column with a
-- constant default, new tables, functions and triggers; the outcome
-- trigger's function is replaced by one that does what it did and also
-- marks facts due. Indexes on the existing table are built CONCURRENTLY,
-- hence NO TRANSACTION; every statement can run again.

-- +goose NO TRANSACTION

-- +goose Up
ALTER TABLE messages ADD COLUMN IF NOT EXISTS model text;

ALTER TABLE conversation_outcomes ADD COLUMN IF NOT EXISTS facts_due boolean NOT NULL DEFAULT true;

CREATE INDEX CONCURRENTLY IF NOT EXISTS conversation_outcomes_facts_due_idx
    ON conversation_outcomes (conversation_id) WHERE facts_due;

CREATE TABLE IF NOT EXISTS conversation_facts (
    conversation_id     text    PRIMARY KEY,
    workspace_id        text    NOT NULL,
    agent_id            text    NOT NULL,
    -- The conversation's start, as a UTC day: every figure belongs to it.
    started_on          date    NOT NULL,
    -- NULL while undecided (or never asked anything).
    outcome             text,
    messages            integer NOT NULL DEFAULT 0,
    handed_off          boolean NOT NULL DEFAULT false,
    -- The distinct reasons of its fallback answers, sorted.
    fallback_reasons    text[]  NOT NULL DEFAULT '{}',
    thumbs_up           integer NOT NULL DEFAULT 0,
    thumbs_down         integer NOT NULL DEFAULT 0,
    -- Durations in seconds, and the upper bound of their histogram bucket
    -- (docs/outcomes.md); NULL when the conversation has none.
    first_reply_seconds bigint,
    first_reply_bucket  bigint,
    resolution_seconds  bigint,
    resolution_bucket   bigint,
    -- Tokens by model ('' for replies stored before models were), sorted
    -- by model; the three arrays are parallel.
    usage_models        text[]   NOT NULL DEFAULT '{}',
    usage_prompt        bigint[] NOT NULL DEFAULT '{}',
    usage_completion    bigint[] NOT NULL DEFAULT '{}',
    updated_at          timestamptz NOT NULL,
    CONSTRAINT conversation_facts_conversation_fkey FOREIGN KEY (workspace_id, conversation_id)
        REFERENCES conversations (workspace_id, id) ON DELETE CASCADE
);

-- No index but the primary key: a report's list walks the conversation
-- list in its order and probes each conversation's facts by key
-- (adapters/postgres/conversation_list.go, reportConditions).

-- One row per workspace, day (conversations started then) and agent: the
-- sum of its conversations' contributions, metric name to count, zeros
-- left out. One row rather than one per metric: a 90-day report of five
-- agents reads 450 rows, not 15,000 (docs/benchmarks.md, reports).
CREATE TABLE IF NOT EXISTS report_days (
    workspace_id text  NOT NULL,
    day          date  NOT NULL,
    agent_id     text  NOT NULL,
    -- Metric name (report_fact_metrics) to count.
    counts       jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (workspace_id, day, agent_id),
    CONSTRAINT report_days_agent_fkey FOREIGN KEY (workspace_id, agent_id)
        REFERENCES agents (workspace_id, id) ON DELETE CASCADE
);

-- When the last rollup sweep found nothing left due: a report's AsOf.
CREATE TABLE IF NOT EXISTS report_rollup_state (
    id        boolean     PRIMARY KEY DEFAULT true CHECK (id),
    swept_at  timestamptz NOT NULL
);

-- +goose StatementBegin
-- report_fact_metrics is one conversation's contribution to its day: the
-- one definition both the rollup (new minus old) and the deletion trigger
-- use. Metric names: conversations, messages, outcome:<OUTCOME or
-- UNDECIDED>, fallback, fallback:<REASON>, handed_off, rated_up,
-- rated_down, thumbs_up, thumbs_down, first_reply:<bucket seconds>,
-- resolution:<bucket seconds>, prompt_tokens:<model>,
-- completion_tokens:<model>.
CREATE OR REPLACE FUNCTION report_fact_metrics(outcome text, messages integer, handed_off boolean,
    fallback_reasons text[], thumbs_up integer, thumbs_down integer, first_reply_bucket bigint,
    resolution_bucket bigint, usage_models text[], usage_prompt bigint[], usage_completion bigint[])
RETURNS TABLE (metric text, n bigint) LANGUAGE sql IMMUTABLE AS $$
    SELECT 'conversations', 1::bigint
    UNION ALL SELECT 'messages', messages WHERE messages <> 0
    UNION ALL SELECT 'outcome:' || coalesce(outcome, 'UNDECIDED'), 1
    UNION ALL SELECT 'fallback', 1 WHERE cardinality(fallback_reasons) > 0
    UNION ALL SELECT 'fallback:' || r, 1 FROM unnest(fallback_reasons) AS r
    UNION ALL SELECT 'handed_off', 1 WHERE handed_off
    UNION ALL SELECT 'rated_up', 1 WHERE thumbs_up > 0
    UNION ALL SELECT 'rated_down', 1 WHERE thumbs_down > 0
    UNION ALL SELECT 'thumbs_up', thumbs_up WHERE thumbs_up > 0
    UNION ALL SELECT 'thumbs_down', thumbs_down WHERE thumbs_down > 0
    UNION ALL SELECT 'first_reply:' || first_reply_bucket, 1 WHERE first_reply_bucket IS NOT NULL
    UNION ALL SELECT 'resolution:' || resolution_bucket, 1 WHERE resolution_bucket IS NOT NULL
    UNION ALL SELECT 'prompt_tokens:' || u.m, u.p FROM unnest(usage_models, usage_prompt) AS u(m, p) WHERE u.p <> 0
    UNION ALL SELECT 'completion_tokens:' || u.m, u.c FROM unnest(usage_models, usage_completion) AS u(m, c) WHERE u.c <> 0
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- report_counts_add adds two maps of counts, leaving zeros out.
CREATE OR REPLACE FUNCTION report_counts_add(a jsonb, b jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(jsonb_object_agg(s.key, s.n), '{}') FROM (
        SELECT e.key, sum(e.value::bigint) AS n
        FROM (SELECT * FROM jsonb_each_text(a) UNION ALL SELECT * FROM jsonb_each_text(b)) AS e
        GROUP BY e.key
    ) AS s WHERE s.n <> 0
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION conversation_facts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- An UPDATE, never an insert: the day row may be going with the
    -- workspace or the agent in the same cascade.
    UPDATE report_days AS d SET counts = report_counts_add(d.counts, (
        SELECT jsonb_object_agg(m.metric, -m.n)
        FROM report_fact_metrics(OLD.outcome, OLD.messages, OLD.handed_off, OLD.fallback_reasons, OLD.thumbs_up,
            OLD.thumbs_down, OLD.first_reply_bucket, OLD.resolution_bucket, OLD.usage_models, OLD.usage_prompt,
            OLD.usage_completion) AS m))
    WHERE d.workspace_id = OLD.workspace_id AND d.day = OLD.started_on AND d.agent_id = OLD.agent_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS conversation_facts_deleted ON conversation_facts;
CREATE TRIGGER conversation_facts_deleted AFTER DELETE ON conversation_facts
    FOR EACH ROW EXECUTE FUNCTION conversation_facts_deleted();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION conversation_outcomes_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.facts_due := true;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS conversation_outcomes_facts ON conversation_outcomes;
CREATE TRIGGER conversation_outcomes_facts BEFORE UPDATE OF outcome ON conversation_outcomes
    FOR EACH ROW WHEN (OLD.outcome IS DISTINCT FROM NEW.outcome)
    EXECUTE FUNCTION conversation_outcomes_changed();

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
        UPDATE conversation_outcomes SET next_check_at = '-infinity'
        WHERE conversation_id = NEW.id AND next_check_at IS DISTINCT FROM '-infinity';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TRIGGER IF EXISTS conversation_outcomes_facts ON conversation_outcomes;
DROP FUNCTION IF EXISTS conversation_outcomes_changed();
DROP TRIGGER IF EXISTS conversation_facts_deleted ON conversation_facts;
DROP FUNCTION IF EXISTS conversation_facts_deleted();
DROP TABLE IF EXISTS report_rollup_state;
DROP TABLE IF EXISTS report_days;
DROP TABLE IF EXISTS conversation_facts;
DROP FUNCTION IF EXISTS report_counts_add(jsonb, jsonb);
DROP FUNCTION IF EXISTS report_fact_metrics(text, integer, boolean, text[], integer, integer, bigint, bigint, text[], bigint[], bigint[]);
DROP INDEX CONCURRENTLY IF EXISTS conversation_outcomes_facts_due_idx;
ALTER TABLE conversation_outcomes DROP COLUMN IF EXISTS facts_due;
ALTER TABLE messages DROP COLUMN IF EXISTS model;
