package postgres

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
)

// Retrieval limits.
const (
	// DefaultRetrieveLimit is the number of chunks Retrieve returns when the
	// query does not say.
	DefaultRetrieveLimit = 5
	// MaxRetrieveLimit caps RetrievalQuery.Limit.
	MaxRetrieveLimit = 50
	// maxQueryBytes bounds the user text given to the parser: the query keeps
	// only its first 64 distinct words anyway.
	maxQueryBytes = 16 << 10
)

// searchSQL is the full-text search over an agent's chunks. Parameters: $1
// the user's text, $2 workspace id, $3 agent id, $4 the number of chunks.
//
//   - terms: the user's words normalised by to_tsvector('english'), exactly as
//     the generated search column was, first mentioned first, at most 64. Each
//     lexeme comes out of the parser and is quoted for the tsquery syntax
//     (backslashes and quotes escaped) and cast to tsquery without being
//     parsed again: nothing the user types becomes an operator.
//   - query: the lexemes OR-ed ('a' | 'b' | ...). websearch_to_tsquery and
//     plainto_tsquery would AND them, so one unknown word would hide every
//     chunk. No lexeme (stopwords, punctuation, empty text) means no terms,
//     no candidates and no rows.
//   - candidates: the tenant filter and @@ on the GIN index, bounded before
//     any ranking to about 200 chunks shared out between the words: each
//     word brings at most ceil(200 / words) of the chunks containing it. A
//     single OR-ed LIMIT 200 would keep whichever 200 matches come first on
//     disk, so a word found in hundreds of chunks could crowd out the few
//     that contain a rare, telling word; with a quota per word, a rare word
//     brings all of its chunks.
//   - ranked: ts_rank_cd (weights A for headings and questions, B for
//     content; normalisation 32 scales it into [0, 1), so repeating a word
//     saturates) times the share of the query's words the chunk contains,
//     which stands in for the IDF that ts_rank_cd lacks: a chunk with three
//     of four words beats one that repeats one of them. Q&A chunks add the
//     square of the Dice similarity between the query's words and their
//     question's, in [0, 1]: a question that matches is the strongest signal
//     we have, while one sharing a single common word adds little.
//
// The tenant filter is repeated on the final join by primary key, so the
// rows returned are scoped even if the candidates' filter were ever changed.
const searchSQL = `WITH terms AS (
    SELECT t.lexeme,
        '''' || replace(replace(t.lexeme, '\', '\\'), '''', '''''') || '''' AS quoted
    FROM unnest(to_tsvector('english', $1::text)) AS t
    ORDER BY t.positions[1], t.lexeme
    LIMIT 64
), query AS (
    SELECT string_agg(quoted, ' | ')::tsquery AS q,
        array_agg(lexeme) AS lexemes,
        count(*)::float8 AS n,
        ceil(200 / greatest(count(*), 1)::float8)::int AS quota
    FROM terms
), candidates AS (
    SELECT DISTINCT ON (m.id) m.id, m.question, m.search
    FROM terms CROSS JOIN LATERAL (
        SELECT c.id, c.question, c.search
        FROM chunks AS c
        WHERE c.workspace_id = $2 AND c.agent_id = $3
            AND c.search @@ terms.quoted::tsquery
        LIMIT (SELECT quota FROM query)
    ) AS m
), ranked AS (
    SELECT c.id,
        (length(c.search) - length(ts_delete(c.search, query.lexemes))) / query.n
            * ts_rank_cd(c.search, query.q, 32)
        + coalesce(qa.dice * qa.dice, 0) AS score
    FROM candidates AS c
    CROSS JOIN query
    LEFT JOIN LATERAL (
        SELECT 2 * (length(v) - length(ts_delete(v, query.lexemes))) / (query.n + length(v)) AS dice
        FROM to_tsvector('english', c.question) AS v
        WHERE c.question <> ''
    ) AS qa ON true
    ORDER BY score DESC, c.id
    LIMIT $4
)
SELECT c.id, c.source_id, s.type, s.name, c.url, c.question, c.content, r.score
FROM ranked AS r
JOIN chunks AS c ON c.id = r.id AND c.workspace_id = $2 AND c.agent_id = $3
JOIN sources AS s ON s.id = c.source_id
ORDER BY r.score DESC, r.id`

// SearchChunks returns up to limit (default 5, at most 50) of the agent's
// chunks that contain any of the words of text, best first. Text that has no
// searchable word (empty, stopwords, punctuation) finds nothing, which is not
// an error. Failures to reach the server wrap domain.ErrUnavailable.
func (s *Store) SearchChunks(ctx context.Context, workspaceID, agentID, text string, limit int) ([]domain.Chunk, error) {
	if workspaceID == "" || agentID == "" {
		// A query without its tenant is a bug in the caller, not a miss.
		return nil, errors.New("postgres: search chunks: workspace and agent ids are required")
	}
	text = retrievalText(text)
	if text == "" {
		return nil, nil
	}
	if limit <= 0 {
		limit = DefaultRetrieveLimit
	}
	limit = min(limit, MaxRetrieveLimit)

	rows, err := s.pool.Query(ctx, searchSQL, text, workspaceID, agentID, limit)
	if err != nil {
		return nil, dbError("search chunks", err)
	}
	defer rows.Close()
	var chunks []domain.Chunk
	for rows.Next() {
		var c domain.Chunk
		var typ string
		if err := rows.Scan(&c.ID, &c.SourceID, &typ, &c.DocumentName, &c.URL, &c.Question, &c.Text, &c.Score); err != nil {
			return nil, dbError("search chunks", err)
		}
		c.SourceType = domain.SourceType(typ)
		chunks = append(chunks, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("search chunks", err)
	}
	return chunks, nil
}

// retrievalText makes user text acceptable to PostgreSQL, which refuses NUL
// characters and invalid UTF-8 in text parameters, and bounds it.
func retrievalText(text string) string {
	if len(text) > maxQueryBytes {
		cut := maxQueryBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	text = strings.ToValidUTF8(text, " ")
	text = strings.ReplaceAll(text, "\x00", " ")
	return strings.TrimSpace(text)
}
