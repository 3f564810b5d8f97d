package postgres_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// crawlFixture is a website source of a fresh workspace, with the handle to
// count rows behind the store's back.
type crawlFixture struct {
	db    *gorm.DB
	store *postgres.Store
	ws    domain.Workspace
	agent domain.Agent
	src   domain.Source
	ref   domain.SourceRef
}

func newCrawlFixture(t *testing.T) crawlFixture {
	t.Helper()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	src := domain.Source{
		ID: domain.NewID(domain.PrefixSource), WorkspaceID: ws.ID, AgentID: agent.ID, Type: domain.SourceWebsite,
		Name: "Help", URL: "https://help.example.com/", MaxPages: 10, MaxDepth: 2,
		Status: domain.SourcePending, CreatedAt: t0, UpdatedAt: t0,
	}
	if err := store.CreateSource(ctxT(t), &src); err != nil {
		t.Fatal(err)
	}
	return crawlFixture{db: db, store: store, ws: ws, agent: agent, src: src,
		ref: domain.SourceRef{WorkspaceID: ws.ID, SourceID: src.ID, Generation: src.Generation}}
}

// rows counts the crawl log's rows of the fixture's source.
func (f crawlFixture) rows(t *testing.T) (progress, steps int64) {
	t.Helper()
	if err := f.db.Raw(`SELECT (SELECT count(*) FROM crawl_progress WHERE source_id = ?), (SELECT count(*) FROM crawl_steps WHERE source_id = ?)`,
		f.src.ID, f.src.ID).Row().Scan(&progress, &steps); err != nil {
		t.Fatal(err)
	}
	return progress, steps
}

// record opens the fixture's crawl and appends three steps: the start page
// (a page), a page that failed, and a page.
func (f crawlFixture) record(t *testing.T) []ports.CrawlStep {
	t.Helper()
	ctx := ctxT(t)
	if p, err := f.store.OpenCrawl(ctx, f.ref); err != nil || len(p.Steps) != 0 || p.Spent != 0 || p.End != ports.CrawlRunning {
		t.Fatalf("OpenCrawl of a new crawl = %+v, %v; want an empty running crawl", p, err)
	}
	steps := []ports.CrawlStep{
		{URL: "https://help.example.com/", FinalURL: "https://help.example.com/home", Start: true, Visited: true,
			Links: []string{"https://help.example.com/a", "https://help.example.com/b"}},
		{URL: "https://help.example.com/a", Depth: 1},
		{URL: "https://help.example.com/b", Depth: 1, Visited: true, Links: []string{}},
	}
	for i, st := range steps {
		var page *domain.Document
		if st.Visited {
			page = &domain.Document{Title: "Page " + st.URL, URL: st.URL, Text: "Text of " + st.URL}
		}
		if err := f.store.AppendCrawlStep(ctx, f.ref, i, st, page, time.Duration(i+1)*time.Second); err != nil {
			t.Fatalf("AppendCrawlStep %d: %v", i, err)
		}
	}
	return steps
}

func TestCrawlLogKeepsACrawlAcrossAttempts(t *testing.T) {
	t.Parallel()
	f := newCrawlFixture(t)
	ctx := ctxT(t)
	steps := f.record(t)

	// The next attempt finds the steps in order, without their pages, and
	// the time spent.
	p, err := f.store.OpenCrawl(ctx, f.ref)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spent != 3*time.Second || p.End != ports.CrawlRunning || len(p.Steps) != len(steps) {
		t.Fatalf("OpenCrawl = %+v", p)
	}
	for i := range steps {
		got, want := p.Steps[i], steps[i]
		if got.URL != want.URL || got.FinalURL != want.FinalURL || got.Depth != want.Depth || got.Start != want.Start ||
			got.Visited != want.Visited || !slices.Equal(got.Links, want.Links) {
			t.Errorf("step %d = %+v, want %+v", i, got, want)
		}
	}
	pages, err := f.store.CrawledPages(ctx, f.ref)
	if err != nil || len(pages) != 2 || pages[0].Text != "Text of https://help.example.com/" ||
		pages[1].URL != "https://help.example.com/b" || pages[1].Title != "Page https://help.example.com/b" {
		t.Fatalf("CrawledPages = %+v, %v", pages, err)
	}

	// A second worker on the same crawl cannot write a step twice.
	err = f.store.AppendCrawlStep(ctx, f.ref, 2, ports.CrawlStep{URL: "https://help.example.com/c", Depth: 1}, nil, 4*time.Second)
	if !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("AppendCrawlStep of a recorded step: %v, want ErrConflict", err)
	}

	if err := f.store.UpdateCrawl(ctx, f.ref, 5*time.Second, ports.CrawlRunning); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.store.OpenCrawl(ctx, f.ref); p.Spent != 5*time.Second || p.End != ports.CrawlRunning {
		t.Fatalf("after UpdateCrawl: %+v", p)
	}
	if err := f.store.UpdateCrawl(ctx, f.ref, 6*time.Second, ports.CrawlOutOfTime); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.store.OpenCrawl(ctx, f.ref); p.Spent != 6*time.Second || p.End != ports.CrawlOutOfTime || len(p.Steps) != 3 {
		t.Fatalf("after the crawl ended: %+v", p)
	}
	// An ended crawl takes no more steps.
	err = f.store.AppendCrawlStep(ctx, f.ref, 3, ports.CrawlStep{URL: "https://help.example.com/c", Depth: 1}, nil, 7*time.Second)
	if !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("AppendCrawlStep after the end: %v, want ErrNotFound", err)
	}
	if err := f.store.UpdateCrawl(ctx, f.ref, 7*time.Second, ports.CrawlComplete); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("UpdateCrawl after the end: %v, want ErrNotFound", err)
	}
}

// The log goes away with its generation: completed, failed, superseded, or
// its source or agent deleted; and nothing is written for a generation
// that is no longer current.
func TestCrawlLogIsDroppedWithItsGeneration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		end  func(t *testing.T, f crawlFixture)
		// gone: the source no longer exists, so OpenCrawl of its next
		// generation is not tried.
		gone bool
	}{
		{"completed", func(t *testing.T, f crawlFixture) {
			result := domain.IndexResult{ContentHash: "h", Embedder: "e", ChunkCount: 1, PageCount: 2, Note: "the crawl stopped early", At: t0}
			if _, ok, err := f.store.CompleteIndexing(ctxT(t), f.ref, result, []domain.StoredChunk{storedChunk(0, "Text", "c", nil)}); err != nil || !ok {
				t.Fatalf("CompleteIndexing = %v, %v", ok, err)
			}
			src, err := f.store.GetSource(ctxT(t), f.ws.ID, f.agent.ID, f.src.ID)
			if err != nil || src.Status != domain.SourceReady || src.StatusReason != "the crawl stopped early" || src.PageCount != 2 {
				t.Fatalf("completed source = %+v, %v; want READY with the note as its reason", src, err)
			}
		}, false},
		{"failed", func(t *testing.T, f crawlFixture) {
			if err := f.store.FailIndexing(ctxT(t), f.ref, "the site is gone", t0); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"superseded by a re-index", func(t *testing.T, f crawlFixture) {
			if _, err := f.store.RequestReindex(ctxT(t), f.ws.ID, f.agent.ID, f.src.ID, t0); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"source deleted", func(t *testing.T, f crawlFixture) {
			if _, err := f.store.DeleteSource(ctxT(t), f.ws.ID, f.agent.ID, f.src.ID); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"agent deleted", func(t *testing.T, f crawlFixture) {
			if err := f.store.DeleteAgent(ctxT(t), f.ws.ID, f.agent.ID); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newCrawlFixture(t)
			ctx := ctxT(t)
			f.record(t)
			if p, s := f.rows(t); p != 1 || s != 3 {
				t.Fatalf("before: %d progress rows, %d steps", p, s)
			}
			tt.end(t, f)
			if p, s := f.rows(t); p != 0 || s != 0 {
				t.Fatalf("after: %d progress rows, %d steps; want none", p, s)
			}
			// The job of that generation, still running, writes nothing.
			if err := f.store.AppendCrawlStep(ctx, f.ref, 3, ports.CrawlStep{URL: "https://help.example.com/c", Depth: 1}, nil, time.Second); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("AppendCrawlStep: %v, want ErrNotFound", err)
			}
			if err := f.store.UpdateCrawl(ctx, f.ref, time.Second, ports.CrawlComplete); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("UpdateCrawl: %v, want ErrNotFound", err)
			}
			if p, s := f.rows(t); p != 0 || s != 0 {
				t.Fatalf("after the stale job's writes: %d progress rows, %d steps; want none", p, s)
			}
			if tt.gone {
				if _, err := f.store.OpenCrawl(ctx, f.ref); !errors.Is(err, domain.ErrNotFound) {
					t.Fatalf("OpenCrawl of a deleted source: %v", err)
				}
			}
		})
	}
}

// Only the source's current generation, in its own workspace, opens a
// crawl; a newer generation's crawl starts afresh.
func TestOpenCrawlChecksTheGeneration(t *testing.T) {
	t.Parallel()
	f := newCrawlFixture(t)
	ctx := ctxT(t)
	f.record(t)
	other, _, _ := newWorkspace(t, f.store, domain.PlanStandard)
	for _, ref := range []domain.SourceRef{
		{WorkspaceID: other.ID, SourceID: f.src.ID, Generation: f.ref.Generation},
		{WorkspaceID: f.ws.ID, SourceID: f.src.ID, Generation: f.ref.Generation + 1},
		{WorkspaceID: f.ws.ID, SourceID: domain.NewID(domain.PrefixSource)},
	} {
		if _, err := f.store.OpenCrawl(ctx, ref); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("OpenCrawl(%+v) = %v, want ErrNotFound", ref, err)
		}
		if current, err := f.store.IndexingCurrent(ctx, ref); err != nil || current {
			t.Errorf("IndexingCurrent(%+v) = %v, %v; want false", ref, current, err)
		}
		if pages, err := f.store.CrawledPages(ctx, ref); err != nil || len(pages) != 0 {
			t.Errorf("CrawledPages(%+v) = %d pages, %v; want none", ref, len(pages), err)
		}
	}
	if current, err := f.store.IndexingCurrent(ctx, f.ref); err != nil || !current {
		t.Fatalf("IndexingCurrent of the current generation = %v, %v", current, err)
	}
	if p, s := f.rows(t); p != 1 || s != 3 {
		t.Fatalf("the refused opens changed the log: %d progress rows, %d steps", p, s)
	}

	// A newer generation (here set directly, as the re-embedding sweep
	// does) replaces the older one's log when its crawl opens.
	if err := f.db.Exec(`UPDATE sources SET generation = generation + 1 WHERE id = ?`, f.src.ID).Error; err != nil {
		t.Fatal(err)
	}
	next := f.ref
	next.Generation++
	p, err := f.store.OpenCrawl(ctx, next)
	if err != nil || len(p.Steps) != 0 || p.Spent != 0 {
		t.Fatalf("OpenCrawl of the next generation = %+v, %v; want an empty crawl", p, err)
	}
	if p, s := f.rows(t); p != 1 || s != 0 {
		t.Fatalf("after the next generation opened: %d progress rows, %d steps", p, s)
	}
}
