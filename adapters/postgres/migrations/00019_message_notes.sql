-- Internal notes (issue 17): members write NOTE messages that only the team
-- sees, and the console's HUMAN replies and notes name the member who wrote
-- them (author_id, the user id; NULL for API keys and the helpdesk, which
-- are nobody's account).
--
-- author_id is nullable with no default: adding it changes no row. It has
-- no foreign key on purpose: a message is a record of what was said, and
-- deleting a user must neither rewrite nor block on a large messages table;
-- the name the message was written under is in author_name.
--
-- The role rule is replaced as 00014 replaced the channel rule, safely on
-- a live table: the new CHECK is added NOT VALID (a moment's lock, no row
-- read), validated under a lock that lets reads and writes go on, then the
-- old rule is dropped and the new one takes its name. NO TRANSACTION so no
-- lock is held past its statement; every statement can run again.
--
-- Down deletes the notes (the old rule cannot hold them) and the column.

-- +goose NO TRANSACTION

-- +goose Up
ALTER TABLE messages ADD COLUMN IF NOT EXISTS author_id text;
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_role_check_new;
ALTER TABLE messages ADD CONSTRAINT messages_role_check_new
    CHECK (role IN ('USER', 'ASSISTANT', 'HUMAN', 'SYSTEM', 'NOTE')) NOT VALID;
ALTER TABLE messages VALIDATE CONSTRAINT messages_role_check_new;
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_role_check;
ALTER TABLE messages RENAME CONSTRAINT messages_role_check_new TO messages_role_check;

-- +goose Down
DELETE FROM messages WHERE role = 'NOTE';
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_role_check_new;
ALTER TABLE messages ADD CONSTRAINT messages_role_check_new
    CHECK (role IN ('USER', 'ASSISTANT', 'HUMAN', 'SYSTEM')) NOT VALID;
ALTER TABLE messages VALIDATE CONSTRAINT messages_role_check_new;
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_role_check;
ALTER TABLE messages RENAME CONSTRAINT messages_role_check_new TO messages_role_check;
ALTER TABLE messages DROP COLUMN IF EXISTS author_id;
