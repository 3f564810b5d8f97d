-- Conversations started in the console's playground carry the channel
-- PLAYGROUND (domain.ChannelPlayground), so they can be told apart from
-- visitors' conversations.

-- +goose Up
ALTER TABLE conversations DROP CONSTRAINT conversations_channel_check;
ALTER TABLE conversations ADD CONSTRAINT conversations_channel_check CHECK (channel IN ('CHAT', 'PLAYGROUND'));

-- +goose Down
UPDATE conversations SET channel = 'CHAT' WHERE channel = 'PLAYGROUND';
ALTER TABLE conversations DROP CONSTRAINT conversations_channel_check;
ALTER TABLE conversations ADD CONSTRAINT conversations_channel_check CHECK (channel IN ('CHAT'));
