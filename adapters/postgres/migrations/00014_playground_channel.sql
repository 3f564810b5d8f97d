-- Conversations started in the console's playground carry the channel
-- PLAYGROUND (domain.ChannelPlayground), so they can be told apart from
-- visitors' conversations.
--
-- Safe on a large, live conversations table. Replacing a CHECK constraint
-- with DROP + ADD would check every row while holding ACCESS EXCLUSIVE, so
-- the chat could neither read nor write conversations until the scan ended.
-- Instead the new rule is added NOT VALID (a catalog change: the lock is
-- held only for a moment and no row is read), then VALIDATE CONSTRAINT
-- scans the rows under SHARE UPDATE EXCLUSIVE, which lets reads and writes
-- go on; only then is the old rule dropped and the new one takes its name,
-- both catalog changes again. The schema in the end is what DROP + ADD
-- gave: one validated conversations_channel_check.
--
-- NO TRANSACTION, so each statement holds its lock only while it runs
-- rather than until the end of the migration. The statements can run again
-- from the first (the drops say IF EXISTS, and the temporary constraint is
-- dropped before it is added), so a migration stopped half-way is simply
-- run again; the migrate command's advisory lock keeps two pods from
-- running it at once.

-- +goose NO TRANSACTION

-- +goose Up
ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_channel_check_new;
ALTER TABLE conversations ADD CONSTRAINT conversations_channel_check_new
    CHECK (channel IN ('CHAT', 'PLAYGROUND')) NOT VALID;
ALTER TABLE conversations VALIDATE CONSTRAINT conversations_channel_check_new;
ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_channel_check;
ALTER TABLE conversations RENAME CONSTRAINT conversations_channel_check_new TO conversations_channel_check;

-- +goose Down
UPDATE conversations SET channel = 'CHAT' WHERE channel = 'PLAYGROUND';
ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_channel_check_new;
ALTER TABLE conversations ADD CONSTRAINT conversations_channel_check_new
    CHECK (channel IN ('CHAT')) NOT VALID;
ALTER TABLE conversations VALIDATE CONSTRAINT conversations_channel_check_new;
ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_channel_check;
ALTER TABLE conversations RENAME CONSTRAINT conversations_channel_check_new TO conversations_channel_check;
