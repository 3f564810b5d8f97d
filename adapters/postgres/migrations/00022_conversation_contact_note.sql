-- The handoff note (issue 17): what the visitor wrote in the handoff form
-- for the member who answers, kept on the conversation next to the contact's
-- name and email so the inbox thread can show it. Until now it only went
-- into the handoff.requested delivery.
--
-- ADD COLUMN with a constant default is a catalog change on PostgreSQL 11
-- and later: no row is rewritten, and the lock is held for a moment only.
-- Conversations handed off before this keep an empty note: their notes are
-- in the deliveries, not worth a backfill that would rewrite rows.

-- +goose Up
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS contact_note text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE conversations DROP COLUMN IF EXISTS contact_note;
