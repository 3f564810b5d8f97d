-- Conversations carry their agent's slug, so the busiest read of the API
-- (the conversation list) needs no join: measured with pgbench, the join cost
-- PostgreSQL a third of its throughput on that query. Slugs never change and a
-- conversation is deleted with its agent; the composite foreign key makes the
-- copy impossible to get wrong.

-- +goose Up
ALTER TABLE agents ADD CONSTRAINT agents_workspace_id_slug_key UNIQUE (workspace_id, id, slug);
ALTER TABLE conversations ADD COLUMN agent_slug text;
UPDATE conversations AS c SET agent_slug = a.slug FROM agents AS a WHERE a.id = c.agent_id;
ALTER TABLE conversations ALTER COLUMN agent_slug SET NOT NULL;
ALTER TABLE conversations ADD CONSTRAINT conversations_agent_slug_fkey
    FOREIGN KEY (workspace_id, agent_id, agent_slug) REFERENCES agents (workspace_id, id, slug)
    ON DELETE CASCADE ON UPDATE CASCADE;

-- +goose Down
ALTER TABLE conversations DROP CONSTRAINT conversations_agent_slug_fkey;
ALTER TABLE conversations DROP COLUMN agent_slug;
ALTER TABLE agents DROP CONSTRAINT agents_workspace_id_slug_key;
