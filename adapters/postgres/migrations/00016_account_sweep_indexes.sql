-- Indexes for the worker's sweep of ended console sessions and old links
-- (account.Service.SweepEnded, issue 16). Each sweep statement picks up to
-- a batch of rows by one cut-off: sessions last used before the idle
-- timeout (expires_at, the other end, has console_sessions_expires_idx
-- from 00013), invitations and resets that expired before the retention.
-- Without these, every sweep on every pod would read the whole table.
--
-- Built CONCURRENTLY, outside a transaction, so the console's sign-ins and
-- requests are never blocked while they build; each is dropped first (a
-- CONCURRENTLY build that failed leaves an invalid index behind), so a
-- migration stopped half-way is simply run again. The migrate command's
-- advisory lock keeps two pods from running it at once.

-- +goose NO TRANSACTION

-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS console_sessions_last_seen_idx;
CREATE INDEX CONCURRENTLY console_sessions_last_seen_idx ON console_sessions (last_seen_at);
DROP INDEX CONCURRENTLY IF EXISTS invitations_expires_idx;
CREATE INDEX CONCURRENTLY invitations_expires_idx ON invitations (expires_at);
DROP INDEX CONCURRENTLY IF EXISTS password_resets_expires_idx;
CREATE INDEX CONCURRENTLY password_resets_expires_idx ON password_resets (expires_at);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS password_resets_expires_idx;
DROP INDEX CONCURRENTLY IF EXISTS invitations_expires_idx;
DROP INDEX CONCURRENTLY IF EXISTS console_sessions_last_seen_idx;
