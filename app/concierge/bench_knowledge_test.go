package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// evalCorpus returns the pages of the evaluation set (real documentation).
func evalCorpus(b *testing.B) []string {
	b.Helper()
	files, err := filepath.Glob("../../testdata/eval/docker/corpus/*.md")
	if err != nil || len(files) == 0 {
		b.Fatalf("corpus: %v", err)
	}
	var pages []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, string(raw))
	}
	return pages
}

// BenchmarkIndexing measures the knowledge:index pipeline on a 10 MB corpus
// with the local embedder: chunking, embedding and storing in PostgreSQL, as
// the worker runs it (the job runs in this process, without the queue). The
// corpus is the evaluation set's documentation repeated with a per-copy
// marker, so no chunk text repeats and no vector is reused.
func BenchmarkIndexing(b *testing.B) {
	s := newStack(b, stackOptions{env: map[string]string{"CONCIERGE_LOG_LEVEL": "error"}})
	tn := s.newTenant(domain.PlanStandard)
	var agent agentBody
	s.do("POST", "/api/v2/agents", map[string]any{"slug": "docs", "name": "Docs"}, tn.auth()).decode(b, &agent)
	pages := evalCorpus(b)

	// Text sources of up to 400 kB, 10 MB in all.
	const total = 10 << 20
	var sources []string
	var cur strings.Builder
	for copyN := 0; ; copyN++ {
		for i, p := range pages {
			fmt.Fprintf(&cur, "\n\n# Copy %d of page %d\n\nEdition %d.\n\n%s", copyN, i, copyN, p)
			if cur.Len() > 400_000 {
				sources = append(sources, cur.String())
				cur.Reset()
			}
		}
		size := 0
		for _, src := range sources {
			size += len(src)
		}
		if size >= total {
			break
		}
	}
	ctx := context.Background()
	var ids []string
	bytes := 0
	for i, text := range sources {
		r := s.do("POST", "/api/v2/agents/docs/sources", map[string]any{"type": "text", "name": fmt.Sprintf("Docs part %d", i), "content": text}, tn.auth())
		s.mustStatus(r, 201)
		ids = append(ids, r.JSON(b)["id"].(string))
		bytes += len(text)
	}
	start := time.Now()
	for _, id := range ids {
		if err := s.sys.indexer.Index(ctx, domain.SourceRef{WorkspaceID: tn.ID, SourceID: id}, true); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	chunks := 0
	for _, src := range s.sources(tn, "docs") {
		if src["status"] != "READY" {
			b.Fatalf("source not indexed: %v", src["statusReason"])
		}
		chunks += int(src["chunkCount"].(float64))
	}
	b.Logf("indexed %.1f MB in %d sources: %d chunks in %v = %.0f chunks/s (%.2f MB/s)",
		float64(bytes)/1e6, len(ids), chunks, took.Round(time.Millisecond), float64(chunks)/took.Seconds(), float64(bytes)/1e6/took.Seconds())
	b.ReportMetric(float64(chunks)/took.Seconds(), "chunks/s")
}

// sources lists the agent's sources (its first 100).
func (s *stack) sources(tn tenant, slug string) []map[string]any {
	var list listBody[map[string]any]
	s.do("GET", "/api/v2/agents/"+slug+"/sources?limit=100", nil, tn.auth()).decode(s.t, &list)
	return list.Data
}

// BenchmarkRetrieval measures hybrid retrieval (keyword and vector legs over
// the in-memory index, fused) at 10,000 and 100,000 chunks in one agent, and
// the resident memory of the index per 100,000 chunks. Chunks are pieces of
// the evaluation set's documentation (about 1,200 bytes each) with their
// local embeddings; queries are the evaluation set's questions. Each size
// runs in a process of its own (inOwnProcess), so its heap figure is its
// index's alone, whatever ran before.
func BenchmarkRetrieval(b *testing.B) {
	pages := evalCorpus(b)
	var paragraphs []string
	for _, p := range pages {
		for _, para := range strings.Split(p, "\n\n") {
			if len(para) > 80 {
				paragraphs = append(paragraphs, para)
			}
		}
	}
	questions := evalQuestions(b)
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			if inOwnProcess(b) { // the heap figure must not include another size's index
				return
			}
			s := newStack(b, stackOptions{env: map[string]string{"CONCIERGE_LOG_LEVEL": "error"}})
			tn := s.newTenant(domain.PlanStandard)
			var agent agentBody
			s.do("POST", "/api/v2/agents", map[string]any{"slug": "docs", "name": "Docs"}, tn.auth()).decode(b, &agent)
			seedChunks(b, s, tn.ID, agent.ID, n, paragraphs)

			ctx := context.Background()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			q := ports.RetrievalQuery{WorkspaceID: tn.ID, AgentID: agent.ID, Text: questions[0], Limit: 5, KnowledgeVersion: 1}
			loadStart := time.Now()
			// The first query loads the index (waiting as long as it takes here).
			for {
				tr := &domain.RetrievalTrace{}
				q.Trace = tr
				if _, err := s.sys.retriever.Retrieve(ctx, q); err != nil {
					b.Fatal(err)
				}
				if tr.Method == "hybrid" {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			loaded := time.Since(loadStart)
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			stats := s.sys.retriever.Stats()

			var lat []time.Duration
			q.Trace = nil
			deadline := time.Now().Add(benchDuration())
			for i := 0; time.Now().Before(deadline); i++ {
				q.Text = questions[i%len(questions)]
				t0 := time.Now()
				if _, err := s.sys.retriever.Retrieve(ctx, q); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
			b.Logf("%d chunks: load %v; heap +%.0f MB (cache charged %.0f MB) = %.0f MB per 100,000 chunks; %d queries p50 %.2f ms p99 %.2f ms",
				n, loaded.Round(time.Millisecond), float64(heap)/1e6, float64(stats.Bytes)/1e6, float64(heap)/1e6*100_000/float64(n),
				len(lat), ms(p50), ms(p99))
			b.ReportMetric(ms(p50), "p50-ms")
			b.ReportMetric(ms(p99), "p99-ms")
			b.ReportMetric(float64(heap)/1e6*100_000/float64(n), "MB-per-100k")
		})
	}
}

func evalQuestions(b *testing.B) []string {
	raw, err := os.ReadFile("../../testdata/eval/docker/questions.json")
	if err != nil {
		b.Fatal(err)
	}
	var qs []string
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if q, ok := strings.CutPrefix(line, `"question": "`); ok {
			qs = append(qs, strings.TrimSuffix(strings.TrimSuffix(q, `",`), `"`))
		}
	}
	if len(qs) < 50 {
		b.Fatalf("only %d questions", len(qs))
	}
	return qs
}

// seedChunks stores n chunks in the agent through CompleteIndexing, in
// sources of 5,000 chunks, each chunk two or three paragraphs of the corpus
// with a marker so every text differs, embedded by the configured embedder.
func seedChunks(b *testing.B, s *stack, workspaceID, agentID string, n int, paragraphs []string) {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	for start := 0; start < n; start += 5000 {
		src := domain.Source{ID: domain.NewID(domain.PrefixSource), WorkspaceID: workspaceID, AgentID: agentID, Type: domain.SourceText,
			Name: fmt.Sprintf("Part %d", start/5000), Content: "-", Status: domain.SourcePending, CreatedAt: now, UpdatedAt: now}
		if err := s.sys.store.CreateSource(ctx, &src); err != nil {
			b.Fatal(err)
		}
		count := min(5000, n-start)
		texts := make([]string, count)
		for i := range texts {
			var t strings.Builder
			fmt.Fprintf(&t, "Section %d.\n\n", start+i)
			for t.Len() < 1000 {
				t.WriteString(paragraphs[rng.IntN(len(paragraphs))])
				t.WriteString("\n\n")
			}
			texts[i] = t.String()
		}
		vectors, err := s.sys.embedder.Embed(ctx, texts)
		if err != nil {
			b.Fatal(err)
		}
		chunks := make([]domain.StoredChunk, count)
		for i := range chunks {
			chunks[i] = domain.StoredChunk{ChunkDraft: domain.ChunkDraft{Ordinal: i, Text: texts[i], Tokens: len(texts[i]) / 4},
				ID: domain.NewID(domain.PrefixChunk), ContentHash: fmt.Sprint(start + i), Vector: vectors[i]}
		}
		ref := domain.SourceRef{WorkspaceID: workspaceID, SourceID: src.ID}
		if _, ok, err := s.sys.store.CompleteIndexing(ctx, ref, domain.IndexResult{Embedder: s.sys.embedder.ID(), ChunkCount: count, At: now}, chunks); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
	if err := s.sys.db.Gorm.Exec("UPDATE agents SET knowledge_version = 1 WHERE id = ?", agentID).Error; err != nil {
		b.Fatal(err)
	}
	if err := s.sys.db.Gorm.Exec("VACUUM ANALYZE chunks").Error; err != nil {
		b.Fatal(err)
	}
}
