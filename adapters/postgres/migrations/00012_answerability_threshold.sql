-- An agent's retrievalThreshold used to be compared with a chunk's best leg
-- score (cosine or normalised BM25), where the default 0.2 let through
-- almost everything. Since issue 14 it is the least answerability (a
-- calibrated chance that the knowledge answers the question) the agent
-- answers with, whose default is 0.35. Agents that kept the old default get
-- the new one: their stored 0.2 is dropped, and reading an agent without the
-- key gives domain.DefaultRetrievalThreshold. Agents that chose another value
-- keep it; docs/api.md tells their owners the scale changed.

-- +goose Up
UPDATE agents SET config = config - 'retrievalThreshold'
WHERE (config->>'retrievalThreshold')::float8 = 0.2;

-- +goose Down
UPDATE agents SET config = jsonb_set(config, '{retrievalThreshold}', '0.2')
WHERE NOT config ? 'retrievalThreshold';
