package postgres_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func storedChunk(ordinal int, text, hash string, vec []float32) domain.StoredChunk {
	return domain.StoredChunk{
		ChunkDraft:  domain.ChunkDraft{Ordinal: ordinal, Heading: "Guide", Text: text, Tokens: 3, URL: "https://example.com/p"},
		ID:          domain.NewID(domain.PrefixChunk),
		ContentHash: hash,
		Vector:      vec,
	}
}

func TestIndexingLifecycle(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)

	src := domain.Source{
		ID: domain.NewID(domain.PrefixSource), WorkspaceID: ws.ID, AgentID: agent.ID, Type: domain.SourceFile,
		Name: "guide.md", Filename: "guide.md", File: []byte("# Guide\nRefunds take five days."),
		Status: domain.SourcePending, CreatedAt: t0, UpdatedAt: t0,
	}
	if err := store.CreateSource(ctx, &src); err != nil {
		t.Fatal(err)
	}
	got, err := store.SourceForIndexing(ctx, ws.ID, src.ID)
	if err != nil || !bytes.Equal(got.File, src.File) || got.Filename != "guide.md" {
		t.Fatalf("SourceForIndexing = %q %q, %v; want the stored file", got.Filename, got.File, err)
	}
	listed, err := store.GetSource(ctx, ws.ID, agent.ID, src.ID)
	if err != nil || listed.File != nil {
		t.Fatalf("GetSource carries the file (%d bytes), %v; want none", len(listed.File), err)
	}

	ref := domain.SourceRef{WorkspaceID: ws.ID, SourceID: src.ID}
	if ok, err := store.BeginIndexing(ctx, ref, t0); err != nil || !ok {
		t.Fatalf("BeginIndexing = %v, %v", ok, err)
	}
	vec := []float32{0.6, 0.8}
	result := domain.IndexResult{ContentHash: "h1", Embedder: "emb-a", ChunkCount: 2, TokenCount: 6, At: t0.Add(time.Minute)}
	change, ok, err := store.CompleteIndexing(ctx, ref, result, []domain.StoredChunk{
		storedChunk(0, "Refunds take five days.", "c1", vec),
		storedChunk(1, "Only stopwords here.", "c2", nil),
	})
	if err != nil || !ok || change.AgentID != agent.ID || change.Version != 1 {
		t.Fatalf("CompleteIndexing = %+v, %v, %v; want version 1 of the agent", change, ok, err)
	}
	ready, _ := store.GetSource(ctx, ws.ID, agent.ID, src.ID)
	if ready.Status != domain.SourceReady || ready.ChunkCount != 2 || ready.TokenCount != 6 ||
		ready.ContentHash != "h1" || ready.Embedder != "emb-a" || !ready.IndexedAt.Equal(micro(result.At)) {
		t.Fatalf("after indexing: %+v", ready)
	}

	version, chunks, err := store.LoadChunks(ctx, ws.ID, agent.ID, "emb-a")
	if err != nil || version != 1 || len(chunks) != 2 {
		t.Fatalf("LoadChunks = %d, %d chunks, %v", version, len(chunks), err)
	}
	if !slices.Equal(chunks[0].Vector, vec) || chunks[1].Vector != nil || chunks[0].Chunk.SourceType != domain.SourceFile ||
		chunks[0].Chunk.DocumentName != "guide.md" || chunks[0].Chunk.URL != "https://example.com/p" || chunks[0].Chunk.Heading != "Guide" {
		t.Fatalf("LoadChunks chunks = %+v", chunks)
	}
	if _, other, _ := store.LoadChunks(ctx, ws.ID, agent.ID, "emb-b"); other[0].Vector != nil {
		t.Fatalf("a vector of another embedder was returned")
	}
	reuse, err := store.ReuseEmbeddings(ctx, ws.ID, "emb-a", []string{"c1", "c2", "c3"})
	if err != nil || len(reuse) != 1 || !slices.Equal(reuse["c1"], vec) {
		t.Fatalf("ReuseEmbeddings = %v, %v; want only c1", reuse, err)
	}
	other, _, _ := newWorkspace(t, store, domain.PlanStandard)
	if reuse, _ := store.ReuseEmbeddings(ctx, other.ID, "emb-a", []string{"c1"}); len(reuse) != 0 {
		t.Fatalf("another workspace reused vectors: %v", reuse)
	}

	// Unchanged text: the chunks stay and the version does not move.
	change, ok, err = store.CompleteIndexing(ctx, ref, result, nil)
	if err != nil || !ok || change.Version != 1 {
		t.Fatalf("unchanged CompleteIndexing = %+v, %v, %v; want version 1 kept", change, ok, err)
	}
	if _, chunks, _ := store.LoadChunks(ctx, ws.ID, agent.ID, "emb-a"); len(chunks) != 2 {
		t.Fatalf("chunks after an unchanged re-index: %d, want 2", len(chunks))
	}

	// A re-index request supersedes jobs of the old generation.
	again, err := store.RequestReindex(ctx, ws.ID, agent.ID, src.ID, t0.Add(time.Hour))
	if err != nil || again.Generation != 1 || again.Status != domain.SourcePending {
		t.Fatalf("RequestReindex = %+v, %v", again, err)
	}
	if ok, _ := store.BeginIndexing(ctx, ref, t0); ok {
		t.Fatal("a job of the old generation began indexing")
	}
	if _, ok, _ := store.CompleteIndexing(ctx, ref, result, []domain.StoredChunk{storedChunk(0, "stale", "c9", nil)}); ok {
		t.Fatal("a job of the old generation completed")
	}
	if err := store.FailIndexing(ctx, ref, "stale", t0); err != nil {
		t.Fatal(err)
	}
	if s, _ := store.GetSource(ctx, ws.ID, agent.ID, src.ID); s.Status != domain.SourcePending {
		t.Fatalf("a stale job's failure changed the status to %s", s.Status)
	}
	ref.Generation = 1
	if err := store.FailIndexing(ctx, ref, "the page answered 404", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	failed, _ := store.GetSource(ctx, ws.ID, agent.ID, src.ID)
	if failed.Status != domain.SourceFailed || failed.StatusReason != "the page answered 404" {
		t.Fatalf("after FailIndexing: %s %q", failed.Status, failed.StatusReason)
	}
	// A failed re-index keeps serving what was indexed before.
	if _, chunks, _ := store.LoadChunks(ctx, ws.ID, agent.ID, "emb-a"); len(chunks) != 2 {
		t.Fatalf("chunks after a failed re-index: %d, want 2", len(chunks))
	}

	// Deleting the source removes its chunks and file and bumps the version.
	change, err = store.DeleteSource(ctx, ws.ID, agent.ID, src.ID)
	if err != nil || change.Version != 2 || change.AgentID != agent.ID {
		t.Fatalf("DeleteSource = %+v, %v; want version 2", change, err)
	}
	version, chunks, err = store.LoadChunks(ctx, ws.ID, agent.ID, "emb-a")
	if err != nil || version != 2 || len(chunks) != 0 {
		t.Fatalf("after delete: version %d, %d chunks, %v", version, len(chunks), err)
	}
	if _, err := store.SourceForIndexing(ctx, ws.ID, src.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("SourceForIndexing of a deleted source: %v", err)
	}
	if _, _, err := store.LoadChunks(ctx, ws.ID, domain.NewID(domain.PrefixAgent), "emb-a"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("LoadChunks of an unknown agent: %v", err)
	}
}

func TestStalledAndReembedSources(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)

	mk := func(status domain.SourceStatus, at time.Time) domain.Source {
		src := domain.Source{ID: domain.NewID(domain.PrefixSource), WorkspaceID: ws.ID, AgentID: agent.ID,
			Type: domain.SourceText, Name: "n", Content: "c", Status: status, CreatedAt: at, UpdatedAt: at}
		if err := store.CreateSource(ctx, &src); err != nil {
			t.Fatal(err)
		}
		return src
	}
	oldPending := mk(domain.SourcePending, t0)
	oldIndexing := mk(domain.SourceIndexing, t0.Add(time.Second))
	mk(domain.SourcePending, t0.Add(time.Hour)) // recent: not stalled
	mk(domain.SourceFailed, t0)                 // finished
	stalled, err := store.StalledSources(ctx, t0.Add(time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ref := range stalled {
		ids = append(ids, ref.SourceID)
	}
	if !slices.Equal(ids, []string{oldPending.ID, oldIndexing.ID}) {
		t.Fatalf("StalledSources = %v, want the old PENDING then the old INDEXING", ids)
	}

	ready := mk(domain.SourcePending, t0)
	ref := domain.SourceRef{WorkspaceID: ws.ID, SourceID: ready.ID}
	if _, ok, err := store.CompleteIndexing(ctx, ref, domain.IndexResult{Embedder: "old", ChunkCount: 1, At: t0},
		[]domain.StoredChunk{storedChunk(0, "c", "h", nil)}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if refs, _ := store.SourcesIndexedOtherwise(ctx, "old", "", t0, 10); len(refs) != 0 {
		t.Fatalf("sources of the current embedder were queued: %v", refs)
	}
	refs, err := store.SourcesIndexedOtherwise(ctx, "new", "", t0.Add(time.Hour), 10)
	if err != nil || len(refs) != 1 || refs[0].SourceID != ready.ID || refs[0].Generation != 1 {
		t.Fatalf("SourcesIndexedOtherwise = %+v, %v; want the READY source at generation 1", refs, err)
	}
	if s, _ := store.GetSource(ctx, ws.ID, agent.ID, ready.ID); s.Status != domain.SourcePending {
		t.Fatalf("re-embed status = %s, want PENDING", s.Status)
	}

	// The question writer counts like the embedder: turning questions on,
	// changing their writer or turning them off indexes the source again.
	ref.Generation = 1
	if _, ok, err := store.CompleteIndexing(ctx, ref, domain.IndexResult{Embedder: "new", QuestionsBy: "m/3/q1", ChunkCount: 1, At: t0},
		[]domain.StoredChunk{storedChunk(0, "c", "h", nil)}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if s, _ := store.GetSource(ctx, ws.ID, agent.ID, ready.ID); s.QuestionsBy != "m/3/q1" {
		t.Fatalf("source's questionsBy = %q, want m/3/q1", s.QuestionsBy)
	}
	if refs, _ := store.SourcesIndexedOtherwise(ctx, "new", "m/3/q1", t0, 10); len(refs) != 0 {
		t.Fatalf("sources of the current writer were queued: %v", refs)
	}
	refs, err = store.SourcesIndexedOtherwise(ctx, "new", "", t0.Add(2*time.Hour), 10)
	if err != nil || len(refs) != 1 || refs[0].SourceID != ready.ID || refs[0].Generation != 2 {
		t.Fatalf("SourcesIndexedOtherwise without questions = %+v, %v; want the source written with them, at generation 2", refs, err)
	}
}

func TestChunkQuestions(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	src := domain.Source{ID: domain.NewID(domain.PrefixSource), WorkspaceID: ws.ID, AgentID: agent.ID,
		Type: domain.SourceText, Name: "Shipping", Content: "c", Status: domain.SourcePending, CreatedAt: t0, UpdatedAt: t0}
	if err := store.CreateSource(ctx, &src); err != nil {
		t.Fatal(err)
	}
	written := storedChunk(0, "Orders leave the warehouse within one business day.", "h-written", nil)
	written.Questions, written.QuestionsBy = []string{"How fast do you dispatch parcels?", "When will my order ship?"}, "m/2/q1"
	none := storedChunk(1, "Thank you for reading.", "h-none", nil)
	none.QuestionsBy = "m/2/q1" // the writer found no question: reused as none
	failed := storedChunk(2, "Returns are free.", "h-failed", nil)
	ref := domain.SourceRef{WorkspaceID: ws.ID, SourceID: src.ID}
	if _, ok, err := store.CompleteIndexing(ctx, ref, domain.IndexResult{Embedder: "e", QuestionsBy: "m/2/q1", ChunkCount: 3, At: t0},
		[]domain.StoredChunk{written, none, failed}); !ok || err != nil {
		t.Fatal(ok, err)
	}

	_, chunks, err := store.LoadChunks(ctx, ws.ID, agent.ID, "e")
	if err != nil || len(chunks) != 3 {
		t.Fatalf("LoadChunks = %d chunks, %v", len(chunks), err)
	}
	if !slices.Equal(chunks[0].Chunk.Questions, written.Questions) || chunks[1].Chunk.Questions != nil || chunks[2].Chunk.Questions != nil {
		t.Fatalf("loaded questions = %q, %q, %q", chunks[0].Chunk.Questions, chunks[1].Chunk.Questions, chunks[2].Chunk.Questions)
	}

	tests := []struct {
		name   string
		ws, by string
		want   map[string][]string
	}{
		{"the same writer", ws.ID, "m/2/q1", map[string][]string{"h-written": written.Questions, "h-none": nil}},
		{"another writer", ws.ID, "m/3/q1", map[string][]string{}},
		{"no writer", ws.ID, "", map[string][]string{}},
		{"another workspace", domain.NewID(domain.PrefixWorkspace), "m/2/q1", map[string][]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.ReuseQuestions(ctx, tc.ws, tc.by, []string{"h-written", "h-none", "h-failed", "h-unknown"})
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("ReuseQuestions = %q, %v; want %q", got, err, tc.want)
			}
			for h, qs := range tc.want {
				if g, ok := got[h]; !ok || !slices.Equal(g, qs) {
					t.Fatalf("ReuseQuestions[%s] = %q (%v); want %q", h, g, ok, qs)
				}
			}
		})
	}

	// PostgreSQL's keyword search finds a chunk by a word only its
	// questions use ("dispatch", "parcels").
	found, err := store.SearchChunks(ctx, ws.ID, agent.ID, "dispatch parcels", 5)
	if err != nil || len(found) != 1 || found[0].ID != written.ID {
		t.Fatalf("SearchChunks by the questions' words = %+v, %v; want the chunk they were written for", found, err)
	}
}
