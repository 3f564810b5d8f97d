package postgres

import (
	"context"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.Retriever = (*Store)(nil)

// Retrieval limits.
const (
	// DefaultRetrieveLimit is the number of chunks Retrieve returns when the
	// query does not say.
	DefaultRetrieveLimit = 5
	// MaxRetrieveLimit caps RetrievalQuery.Limit.
	MaxRetrieveLimit = 50
	// MaxChunkChars caps the characters of a chunk's Text. Sources are stored
	// whole for now, so a long text source is cut down to the passages around
	// its matches (see retrieveSQL).
	MaxChunkChars = 4000
	// maxQueryBytes bounds the user text given to the parser: the query keeps
	// only its first 64 distinct words anyway.
	maxQueryBytes = 16 << 10
)

// retrieveSQL is the full-text retrieval over an agent's READY sources.
// Parameters: $1 the user's text, $2 workspace id, $3 agent id, $4 the number
// of chunks, $5 how many characters of a text source to fetch at most.
//
//   - terms: the user's words normalised by to_tsvector('english'), exactly as
//     the generated search column was, first mentioned first, at most 64. Each
//     lexeme comes out of the parser and is quoted for the tsquery syntax
//     (backslashes and quotes escaped) and cast to tsquery without being
//     parsed again: nothing the user types becomes an operator.
//   - query: the lexemes OR-ed ('a' | 'b' | ...). websearch_to_tsquery and
//     plainto_tsquery would AND them, so one unknown word would hide every
//     source. No lexeme (stopwords, punctuation, empty text) means no terms,
//     no candidates and no rows.
//   - candidates: the tenant filter and @@ on the GIN index, bounded before
//     any ranking to about 200 sources shared out between the words: each
//     word brings at most ceil(200 / words) of the sources containing it. A
//     single OR-ed LIMIT 200 would keep whichever 200 matches come first on
//     disk, so a word found in hundreds of sources could crowd out the few
//     that contain a rare, telling word; with a quota per word, a rare word
//     brings all of its sources.
//   - ranked: ts_rank_cd (weights A for name and question, B for content and
//     answer; normalisation 32 scales it into [0, 1), so repeating a word
//     saturates) times the share of the query's words the source contains,
//     which stands in for the IDF that ts_rank_cd lacks: a source with three
//     of four words beats one that repeats one of them. Q&A sources add the
//     square of the Dice similarity between the query's words and their
//     question's, in [0, 1]: a question that matches is the strongest signal
//     we have, while one sharing a single common word adds little. No length
//     normalisation: it would sink long texts below any short Q&A.
//   - the outer query fetches the text of the winners only: a Q&A answer, a
//     short text whole, and for a long text the passages around its matches
//     (ts_headline fragments in document order, joined by " … "), or its
//     beginning when only its name matched. ts_headline parses the whole
//     document, so it runs on at most $4 rows.
//
// The tenant filter is repeated on the final join by primary key, so the
// rows returned are scoped even if the candidates' filter were ever changed.
const retrieveSQL = `WITH terms AS (
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
    SELECT DISTINCT ON (m.id) m.id, m.type, m.question, m.search
    FROM terms CROSS JOIN LATERAL (
        SELECT s.id, s.type, s.question, s.search
        FROM sources AS s
        WHERE s.workspace_id = $2 AND s.agent_id = $3
            AND s.status = 'READY' AND s.type IN ('text', 'qa')
            AND s.search @@ terms.quoted::tsquery
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
        WHERE c.type = 'qa'
    ) AS qa ON true
    ORDER BY score DESC, c.id
    LIMIT $4
)
SELECT s.id, s.type, s.name, s.question,
    CASE
        WHEN s.type = 'qa' THEN left(s.answer, $5)
        WHEN char_length(s.content) <= $5 OR NOT ts_filter(s.search, '{b}') @@ query.q THEN left(s.content, $5)
        ELSE ts_headline('english', s.content, query.q,
            'MaxFragments=4, MaxWords=150, MinWords=60, StartSel="", StopSel="", FragmentDelimiter=" … "')
    END AS text,
    r.score
FROM ranked AS r
JOIN sources AS s ON s.id = r.id AND s.workspace_id = $2 AND s.agent_id = $3
CROSS JOIN query
ORDER BY r.score DESC, r.id`

// Retrieve returns up to q.Limit (default 5, at most 50) chunks of the
// agent's READY text and Q&A sources that contain any of the words of q.Text,
// best first. Each source is one chunk whose ID is the source id. Text that
// has no searchable word (empty, stopwords, punctuation) finds nothing, which
// is not an error. Failures to reach the server wrap domain.ErrUnavailable.
func (s *Store) Retrieve(ctx context.Context, q ports.RetrievalQuery) ([]domain.Chunk, error) {
	if q.WorkspaceID == "" || q.AgentID == "" {
		// A query without its tenant is a bug in the caller, not a miss.
		return nil, errors.New("postgres: retrieve: workspace and agent ids are required")
	}
	text := retrievalText(q.Text)
	if text == "" {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultRetrieveLimit
	}
	limit = min(limit, MaxRetrieveLimit)

	// One character more than the cap tells cutText the text went on.
	rows, err := s.pool.Query(ctx, retrieveSQL, text, q.WorkspaceID, q.AgentID, limit, MaxChunkChars+1)
	if err != nil {
		return nil, dbError("retrieve", err)
	}
	defer rows.Close()
	var chunks []domain.Chunk
	for rows.Next() {
		var c domain.Chunk
		var typ string
		if err := rows.Scan(&c.ID, &typ, &c.DocumentName, &c.Question, &c.Text, &c.Score); err != nil {
			return nil, dbError("retrieve", err)
		}
		c.SourceID = c.ID
		c.SourceType = domain.SourceType(typ)
		if c.SourceType != domain.SourceQA {
			c.Question = ""
		}
		c.Text = cutText(c.Text, MaxChunkChars)
		chunks = append(chunks, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("retrieve", err)
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

// cutText returns text if it has at most maxChars characters, else its first
// maxChars-1 characters, cut back to a word boundary when one is near, and an
// ellipsis.
func cutText(text string, maxChars int) string {
	if utf8.RuneCountInString(text) <= maxChars {
		return text
	}
	end, n := 0, 0
	for i := range text {
		if n == maxChars-1 {
			end = i
			break
		}
		n++
	}
	cut := text[:end]
	// Prefer ending between words, unless that loses more than a few lines.
	if i := strings.LastIndexFunc(cut, unicode.IsSpace); i >= 0 && len(cut)-i < 200 {
		cut = cut[:i]
	}
	return strings.TrimRightFunc(cut, unicode.IsSpace) + "…"
}
