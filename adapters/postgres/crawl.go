package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.CrawlLog = (*Store)(nil)

// IndexingCurrent reports whether ref.Generation is the generation of an
// existing source.
func (s *Store) IndexingCurrent(ctx context.Context, ref domain.SourceRef) (bool, error) {
	var current bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sources WHERE workspace_id = $1 AND id = $2 AND generation = $3)`,
		ref.WorkspaceID, ref.SourceID, ref.Generation).Scan(&current)
	if err != nil {
		return false, dbError("check indexing generation", err)
	}
	return current, nil
}

// OpenCrawl returns the progress of ref's crawl, starting an empty one when
// there is none for ref.Generation. The source row is locked against
// deletion (FOR KEY SHARE) while the progress row is created, so a crawl
// log never outlives its source.
func (s *Store) OpenCrawl(ctx context.Context, ref domain.SourceRef) (ports.CrawlProgress, error) {
	var p ports.CrawlProgress
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var generation int
		err := tx.QueryRow(ctx, `SELECT generation FROM sources WHERE workspace_id = $1 AND id = $2 FOR KEY SHARE`,
			ref.WorkspaceID, ref.SourceID).Scan(&generation)
		if err != nil {
			return err
		}
		if generation != ref.Generation {
			return pgx.ErrNoRows
		}
		if _, err := tx.Exec(ctx, `DELETE FROM crawl_progress WHERE source_id = $1 AND generation <> $2`,
			ref.SourceID, ref.Generation); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO crawl_progress (source_id, workspace_id, generation, created_at, updated_at)
VALUES ($1, $2, $3, now(), now()) ON CONFLICT (source_id) DO NOTHING`, ref.SourceID, ref.WorkspaceID, ref.Generation); err != nil {
			return err
		}
		var spentMS int64
		var end string
		if err := tx.QueryRow(ctx, `SELECT spent_ms, ended FROM crawl_progress WHERE workspace_id = $1 AND source_id = $2`,
			ref.WorkspaceID, ref.SourceID).Scan(&spentMS, &end); err != nil {
			return err
		}
		p.Spent, p.End = time.Duration(spentMS)*time.Millisecond, ports.CrawlEnd(end)
		rows, err := tx.Query(ctx, `SELECT url, final_url, depth, start, visited, links FROM crawl_steps
WHERE workspace_id = $1 AND source_id = $2 ORDER BY seq`, ref.WorkspaceID, ref.SourceID)
		if err != nil {
			return err
		}
		p.Steps, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.CrawlStep, error) {
			var st ports.CrawlStep
			err := row.Scan(&st.URL, &st.FinalURL, &st.Depth, &st.Start, &st.Visited, &st.Links)
			return st, err
		})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return ports.CrawlProgress{}, domain.NotFound("source")
	}
	if err != nil {
		return ports.CrawlProgress{}, dbError("open crawl", err)
	}
	return p, nil
}

// runningCrawl limits an UPDATE of crawl_progress AS p to ref's crawl
// ($1 workspace, $2 source, $3 generation) while it runs and ref.Generation
// is still the source's: nothing is written for a deleted or superseded
// source, or for a crawl that ended.
const runningCrawl = `FROM sources AS s
WHERE p.workspace_id = $1 AND p.source_id = $2 AND p.generation = $3 AND p.ended = ''
    AND s.workspace_id = p.workspace_id AND s.id = p.source_id AND s.generation = p.generation`

// AppendCrawlStep records one step of a running crawl, and the crawl time
// spent, in one statement.
func (s *Store) AppendCrawlStep(ctx context.Context, ref domain.SourceRef, seq int, step ports.CrawlStep, page *domain.Document, spent time.Duration) error {
	var title, pageURL, text string
	if page != nil {
		title, pageURL, text = page.Title, page.URL, page.Text
	}
	links := step.Links
	if links == nil {
		links = []string{}
	}
	tag, err := s.pool.Exec(ctx, `WITH cur AS (
    UPDATE crawl_progress AS p SET spent_ms = $4, updated_at = now() `+runningCrawl+`
    RETURNING p.source_id
)
INSERT INTO crawl_steps (source_id, generation, workspace_id, seq, url, final_url, depth, start, links, visited, title, page_url, page_text)
SELECT source_id, $3, $1, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 FROM cur`,
		ref.WorkspaceID, ref.SourceID, ref.Generation, spent.Milliseconds(), seq,
		step.URL, step.FinalURL, step.Depth, step.Start, links, page != nil, title, pageURL, text)
	if _, dup := uniqueViolation(err); dup {
		return domain.Conflict("step %d of the crawl of source %s is recorded already", seq, ref.SourceID)
	}
	if err != nil {
		return dbError("append crawl step", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.NotFound("crawl")
	}
	return nil
}

// UpdateCrawl records the crawl time spent and whether the crawl ended.
func (s *Store) UpdateCrawl(ctx context.Context, ref domain.SourceRef, spent time.Duration, end ports.CrawlEnd) error {
	tag, err := s.pool.Exec(ctx, `UPDATE crawl_progress AS p SET spent_ms = $4, ended = $5, updated_at = now() `+runningCrawl,
		ref.WorkspaceID, ref.SourceID, ref.Generation, spent.Milliseconds(), string(end))
	if err != nil {
		return dbError("update crawl", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.NotFound("crawl")
	}
	return nil
}

// CrawledPages returns the pages of ref's crawl in crawl order.
func (s *Store) CrawledPages(ctx context.Context, ref domain.SourceRef) ([]domain.Document, error) {
	rows, err := s.pool.Query(ctx, `SELECT title, page_url, page_text FROM crawl_steps
WHERE workspace_id = $1 AND source_id = $2 AND generation = $3 AND visited ORDER BY seq`,
		ref.WorkspaceID, ref.SourceID, ref.Generation)
	if err != nil {
		return nil, dbError("crawled pages", err)
	}
	docs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Document, error) {
		var d domain.Document
		err := row.Scan(&d.Title, &d.URL, &d.Text)
		return d, err
	})
	if err != nil {
		return nil, dbError("crawled pages", err)
	}
	return docs, nil
}
