-- A website crawl's progress, kept as it goes so that a crawl whose worker
-- died (a deploy, an out-of-memory kill, a lost node) continues where it
-- was on its next attempt instead of fetching every page again, and so that
-- its time budget counts every attempt.
--
-- One crawl_progress row per source, for the generation being crawled; a
-- newer generation's crawl replaces it. crawl_steps is the crawl's log, one
-- row per page request in crawl order: what was asked for, where it led,
-- the links it queued (from which the crawler rebuilds its queue) and, when
-- the request gave a page, the page's extracted text, which is what the
-- source is indexed from once the crawl ends. Both go when the generation
-- completes or fails (the index job deletes them), when a re-index
-- supersedes it, and with the source (foreign keys).

-- +goose Up
CREATE TABLE crawl_progress (
    source_id    text        PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
    workspace_id text        NOT NULL,
    generation   integer     NOT NULL,
    -- Crawl time spent by every attempt so far, against the time budget.
    spent_ms     bigint      NOT NULL DEFAULT 0 CHECK (spent_ms >= 0),
    -- '' while the crawl runs; how it ended otherwise.
    ended        text        NOT NULL DEFAULT '' CHECK (ended IN ('', 'complete', 'out_of_time')),
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    -- Target of crawl_steps' foreign key: steps belong to one generation.
    CONSTRAINT crawl_progress_generation_key UNIQUE (source_id, generation)
);

CREATE TABLE crawl_steps (
    source_id    text    NOT NULL,
    generation   integer NOT NULL,
    workspace_id text    NOT NULL,
    seq          integer NOT NULL CHECK (seq >= 0),
    url          text    NOT NULL,
    final_url    text    NOT NULL DEFAULT '',
    depth        integer NOT NULL CHECK (depth >= 0),
    start        boolean NOT NULL DEFAULT false,
    links        text[]  NOT NULL DEFAULT '{}',
    visited      boolean NOT NULL DEFAULT false,
    title        text    NOT NULL DEFAULT '',
    page_url     text    NOT NULL DEFAULT '',
    page_text    text    NOT NULL DEFAULT '',
    PRIMARY KEY (source_id, seq),
    FOREIGN KEY (source_id, generation) REFERENCES crawl_progress (source_id, generation) ON DELETE CASCADE
);
-- Page text is written once, read once and deleted; lz4 compresses it at a
-- fraction of pglz's cost (see 00008).
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE crawl_steps ALTER COLUMN page_text SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available; crawl_steps.page_text stays compressed with pglz';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE crawl_steps;
DROP TABLE crawl_progress;
