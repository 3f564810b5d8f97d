-- The knowledge pipeline: every source type, chunks with their vectors, and a
-- per-agent knowledge version that retrieval caches key on.
--
-- Sources become the unit a user manages (status, counts, re-index, delete);
-- chunks are what retrieval searches. Text and Q&A sources indexed before
-- this migration have no chunks, so they go back to PENDING and the worker's
-- sweeper indexes them again (it picks up PENDING sources on start).

-- +goose Up
ALTER TABLE sources DROP CONSTRAINT sources_type_check;
ALTER TABLE sources ADD CONSTRAINT sources_type_check
    CHECK (type IN ('text', 'qa', 'file', 'url', 'website'));
ALTER TABLE sources
    -- The start URL of url and website sources.
    ADD COLUMN url          text        NOT NULL DEFAULT '',
    -- The uploaded file's name for file sources (its extension picks the extractor).
    ADD COLUMN filename     text        NOT NULL DEFAULT '',
    ADD COLUMN max_pages    integer     NOT NULL DEFAULT 0 CHECK (max_pages >= 0),
    ADD COLUMN max_depth    integer     NOT NULL DEFAULT 0 CHECK (max_depth >= 0),
    -- SHA-256 of the extracted text last indexed, and the embedder that
    -- indexed it: re-indexing identical text with the same embedder is a no-op.
    ADD COLUMN content_hash text        NOT NULL DEFAULT '',
    ADD COLUMN embedder     text        NOT NULL DEFAULT '',
    ADD COLUMN page_count   integer     NOT NULL DEFAULT 0 CHECK (page_count >= 0),
    ADD COLUMN indexed_at   timestamptz,
    -- Bumped by every request to (re)index; a job carries the generation it
    -- was enqueued for, so a stale retry cannot overwrite newer work.
    ADD COLUMN generation   integer     NOT NULL DEFAULT 0;
DROP INDEX sources_search_idx;
ALTER TABLE sources DROP COLUMN search;
ALTER TABLE sources RESET (
    autovacuum_vacuum_insert_threshold,
    autovacuum_vacuum_insert_scale_factor,
    autovacuum_analyze_threshold,
    autovacuum_analyze_scale_factor
);
UPDATE sources SET status = 'PENDING', chunk_count = 0, token_count = 0;
-- The sweeper's scan: sources waiting or stuck in indexing.
CREATE INDEX sources_pending_idx ON sources (updated_at) WHERE status IN ('PENDING', 'INDEXING');

-- Uploaded files are kept so a source can be re-indexed (a new extractor, a
-- new embedder) without asking the user for the file again.
CREATE TABLE source_files (
    source_id    text        PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
    workspace_id text        NOT NULL,
    body         bytea       NOT NULL,
    created_at   timestamptz NOT NULL
);

CREATE TABLE chunks (
    id            text        PRIMARY KEY,
    workspace_id  text        NOT NULL,
    agent_id      text        NOT NULL,
    source_id     text        NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    ordinal       integer     NOT NULL CHECK (ordinal >= 0),
    heading       text        NOT NULL DEFAULT '',
    -- The page a chunk of a web source came from.
    url           text        NOT NULL DEFAULT '',
    -- Q&A chunks: the question; content is the answer.
    question      text        NOT NULL DEFAULT '',
    content       text        NOT NULL,
    token_count   integer     NOT NULL CHECK (token_count >= 0),
    -- SHA-256 of what was embedded: identical text is embedded once per
    -- workspace and embedder (see the index job).
    content_hash  text        NOT NULL,
    embedder      text        NOT NULL,
    -- Little-endian float32s, L2-normalised; NULL when the text embedded to
    -- nothing (only stopwords, say).
    embedding     bytea,
    search        tsvector    GENERATED ALWAYS AS (
                      setweight(to_tsvector('english'::regconfig, heading), 'A') ||
                      setweight(to_tsvector('english'::regconfig, question), 'A') ||
                      setweight(to_tsvector('english'::regconfig, content), 'B')
                  ) STORED,
    created_at    timestamptz NOT NULL,
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agents (workspace_id, id) ON DELETE CASCADE,
    CONSTRAINT chunks_source_ordinal_key UNIQUE (source_id, ordinal)
);
CREATE INDEX chunks_agent_idx ON chunks (workspace_id, agent_id);
CREATE INDEX chunks_search_idx ON chunks USING gin (search);
CREATE INDEX chunks_hash_idx ON chunks (workspace_id, embedder, content_hash);
-- A knowledge import is followed by searches at once; the GIN index's
-- statistics are refreshed only by VACUUM (see 00003).
ALTER TABLE chunks SET (
    autovacuum_vacuum_insert_threshold = 100,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_threshold = 100,
    autovacuum_analyze_scale_factor = 0.05
);

ALTER TABLE agents ADD COLUMN knowledge_version bigint NOT NULL DEFAULT 0;

-- The retrieval trace of an answer: what was considered and why it was kept.
ALTER TABLE messages ADD COLUMN trace jsonb;

-- +goose Down
ALTER TABLE messages DROP COLUMN trace;
ALTER TABLE agents DROP COLUMN knowledge_version;
DROP TABLE chunks;
DROP TABLE source_files;
DROP INDEX sources_pending_idx;
DELETE FROM sources WHERE type NOT IN ('text', 'qa');
ALTER TABLE sources
    DROP COLUMN url, DROP COLUMN filename, DROP COLUMN max_pages, DROP COLUMN max_depth,
    DROP COLUMN content_hash, DROP COLUMN embedder, DROP COLUMN page_count,
    DROP COLUMN indexed_at, DROP COLUMN generation;
ALTER TABLE sources DROP CONSTRAINT sources_type_check;
ALTER TABLE sources ADD CONSTRAINT sources_type_check CHECK (type IN ('text', 'qa'));
ALTER TABLE sources ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english'::regconfig, name), 'A') ||
    setweight(to_tsvector('english'::regconfig, question), 'A') ||
    setweight(to_tsvector('english'::regconfig, content), 'B') ||
    setweight(to_tsvector('english'::regconfig, answer), 'B')
) STORED;
CREATE INDEX sources_search_idx ON sources USING gin (search);
UPDATE sources SET status = 'READY';
