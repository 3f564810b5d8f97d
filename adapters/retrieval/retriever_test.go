package retrieval_test

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/embedding/local"
	"github.com/conciergehq/concierge/adapters/retrieval"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// reader is an in-memory ports.ChunkReader whose loads can be held back.
type reader struct {
	mu       sync.Mutex
	version  int64
	chunks   []ports.IndexedChunk
	loads    atomic.Int32
	searches atomic.Int32
	hold     chan struct{} // when set, LoadChunks waits for it
}

func (r *reader) LoadChunks(ctx context.Context, workspaceID, agentID, embedder string) (int64, []ports.IndexedChunk, error) {
	r.loads.Add(1)
	if r.hold != nil {
		<-r.hold
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version, append([]ports.IndexedChunk(nil), r.chunks...), nil
}

func (r *reader) SearchChunks(ctx context.Context, workspaceID, agentID, text string, limit int) ([]domain.Chunk, error) {
	r.searches.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	// A crude full-text search: the share of the query's words in the text.
	words := strings.Fields(strings.ToLower(text))
	var out []domain.Chunk
	for _, c := range r.chunks {
		ch := c.Chunk
		for _, w := range words {
			if strings.Contains(strings.ToLower(ch.Text), w) {
				ch.Score += 1 / float64(len(words))
			}
		}
		if ch.Score > 0 {
			out = append(out, ch)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Score > out[j].Score || (out[i].Score == out[j].Score && out[i].ID < out[j].ID)
	})
	return out[:min(limit, len(out))], nil
}

func (r *reader) set(version int64, emb *local.Embedder, texts map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.version = version
	r.chunks = nil
	for id, text := range texts {
		r.chunks = append(r.chunks, ports.IndexedChunk{
			Chunk:  domain.Chunk{ID: id, SourceID: "src_" + id, SourceType: domain.SourceText, DocumentName: id, Text: text},
			Vector: emb.EmbedOne(text),
		})
	}
}

func newRetriever(t *testing.T, r *reader, opts retrieval.Options) (*retrieval.Retriever, *local.Embedder) {
	t.Helper()
	emb, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return retrieval.New(r, emb, opts, slog.New(slog.DiscardHandler)), emb
}

var kb = map[string]string{
	"refunds":  "Refunds are issued to the original payment method within five business days.",
	"shipping": "Standard shipping takes three to five business days; express shipping one to two.",
	"password": "To reset your password, click Forgot password on the sign-in page.",
	"history":  "Acme was founded in 2001 in a garage in Lyon.",
}

func query(text string, version int64, threshold float64) ports.RetrievalQuery {
	return ports.RetrievalQuery{WorkspaceID: "ws_1", AgentID: "agt_1", Text: text, Limit: 2, Threshold: threshold, KnowledgeVersion: version, Trace: &domain.RetrievalTrace{}}
}

func TestHybridRetrieval(t *testing.T) {
	t.Parallel()
	r := &reader{}
	ret, emb := newRetriever(t, r, retrieval.Options{LoadWait: 5 * time.Second})
	r.set(1, emb, kb)

	tests := []struct {
		name, text string
		threshold  float64
		wantFirst  string
		wantNone   bool
	}{
		{name: "keywords", text: "how do I reset my password", wantFirst: "password"},
		{name: "typo caught by the vectors", text: "how do I reset my pasword", wantFirst: "password"},
		{name: "word forms", text: "refund to my card?", wantFirst: "refunds"},
		{name: "unrelated question under the threshold", text: "what is the weather in Paris", threshold: 0.15, wantNone: true},
		{name: "stopwords only", text: "the and of", wantNone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := query(tt.text, 1, tt.threshold)
			got, err := ret.Retrieve(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantNone {
				if len(got) != 0 {
					t.Fatalf("got %v, want nothing", ids(got))
				}
				return
			}
			if len(got) == 0 || got[0].ID != tt.wantFirst {
				t.Fatalf("got %v, want %s first (trace %+v)", ids(got), tt.wantFirst, q.Trace)
			}
			if q.Trace.Method != "hybrid" || q.Trace.KnowledgeVersion != 1 || len(q.Trace.Candidates) == 0 || !q.Trace.Candidates[0].Kept {
				t.Fatalf("trace = %+v", q.Trace)
			}
			for _, c := range got {
				if c.Score < tt.threshold || c.Score > 1 {
					t.Errorf("score %v outside [threshold, 1]", c.Score)
				}
			}
		})
	}
	if n := r.loads.Load(); n != 1 {
		t.Fatalf("%d loads for one agent at one version, want 1", n)
	}
	if n := r.searches.Load(); n != 0 {
		t.Fatalf("%d PostgreSQL searches while the index was in memory", n)
	}
}

func TestTraceReasons(t *testing.T) {
	t.Parallel()
	r := &reader{}
	ret, emb := newRetriever(t, r, retrieval.Options{LoadWait: 5 * time.Second})
	r.set(1, emb, kb)
	q := query("shipping refunds password business days", 1, 0)
	q.Limit = 1
	got, err := ret.Retrieve(t.Context(), q)
	if err != nil || len(got) != 1 {
		t.Fatalf("got %v, %v", ids(got), err)
	}
	var kept, beyond int
	for _, c := range q.Trace.Candidates {
		switch c.Reason {
		case domain.TraceKept:
			kept++
		case domain.TraceBeyondTopK:
			beyond++
		}
	}
	if kept != 1 || beyond == 0 {
		t.Fatalf("kept %d, beyond top-k %d: %+v", kept, beyond, q.Trace.Candidates)
	}
}

// While an agent's index loads, queries are answered by PostgreSQL; a newer
// knowledge version replaces the cached index; an invalidation forces a reload.
func TestLoadingFallbackAndVersions(t *testing.T) {
	t.Parallel()
	r := &reader{hold: make(chan struct{})}
	ret, emb := newRetriever(t, r, retrieval.Options{LoadWait: 20 * time.Millisecond})
	r.set(1, emb, kb)

	q := query("reset password", 1, 0)
	got, err := ret.Retrieve(t.Context(), q)
	if err != nil || len(got) == 0 {
		t.Fatalf("fallback: %v, %v", ids(got), err)
	}
	if q.Trace.Method != "keyword" || q.Trace.Note == "" || r.searches.Load() != 1 {
		t.Fatalf("while loading: trace %+v, %d searches", q.Trace, r.searches.Load())
	}
	close(r.hold)
	waitFor(t, func() bool {
		q := query("reset password", 1, 0)
		_, _ = ret.Retrieve(t.Context(), q)
		return q.Trace.Method == "hybrid"
	})

	// Version 2 on another pod: this pod's next query at version 2 reloads.
	r.set(2, emb, map[string]string{"warranty": "Every telescope has a seven year warranty."})
	loads := r.loads.Load()
	q = query("telescope warranty", 2, 0)
	got, _ = ret.Retrieve(t.Context(), q)
	if len(got) == 0 || got[0].ID != "warranty" || r.loads.Load() != loads+1 {
		t.Fatalf("after a version change: %v, loads %d -> %d", ids(got), loads, r.loads.Load())
	}
	// An invalidation (the Redis message) drops the index even at the same version.
	ret.Invalidate("agt_1", 0)
	q = query("telescope warranty", 2, 0)
	_, _ = ret.Retrieve(t.Context(), q)
	if r.loads.Load() != loads+2 {
		t.Fatalf("an invalidated index was not reloaded: %d loads", r.loads.Load()-loads)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ids(chunks []domain.Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.ID
	}
	return out
}

// With the PostgreSQL keyword leg, every query asks PostgreSQL and fuses its
// ranking with the in-memory vector search.
func TestPostgresKeywordLeg(t *testing.T) {
	t.Parallel()
	r := &reader{}
	ret, emb := newRetriever(t, r, retrieval.Options{LoadWait: 5 * time.Second, KeywordFromPostgres: true})
	r.set(1, emb, kb)
	for range 3 {
		q := query("how do I reset my pasword", 1, 0)
		got, err := ret.Retrieve(t.Context(), q)
		if err != nil || len(got) == 0 {
			t.Fatalf("got %v, %v", ids(got), err)
		}
		if got[0].ID != "password" {
			t.Fatalf("got %v, want password first", ids(got))
		}
		c := q.Trace.Candidates[0]
		if c.KeywordRank == 0 || c.VectorRank == 0 || q.Trace.Method != "hybrid" {
			t.Fatalf("trace = %+v", q.Trace)
		}
	}
	if n := r.searches.Load(); n != 3 {
		t.Fatalf("%d PostgreSQL searches for 3 queries, want 3", n)
	}
}

// TestWrittenQuestionsFindTheirChunk: a customer's wording that the
// passage never uses finds it through the questions written for it at
// index time, in the keyword leg and the reranker, and answerability
// counts their words as covered; without them the same question falls
// back.
func TestWrittenQuestionsFindTheirChunk(t *testing.T) {
	t.Parallel()
	const dispatch = "Orders leave our warehouse within one business day of payment."
	tests := []struct {
		name      string
		questions []string
		wantFound bool
	}{
		{name: "with questions", questions: []string{"How fast do you dispatch parcels?", "When will my order be sent?"}, wantFound: true},
		{name: "without questions", wantFound: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &reader{}
			ret, emb := newRetriever(t, r, retrieval.Options{LoadWait: 5 * time.Second})
			r.set(1, emb, kb)
			r.chunks = append(r.chunks, ports.IndexedChunk{
				Chunk:  domain.Chunk{ID: "dispatch", SourceID: "src_dispatch", SourceType: domain.SourceText, DocumentName: "Orders", Text: dispatch, Questions: tt.questions},
				Vector: emb.EmbedOne(dispatch),
			})
			q := query("how fast do you dispatch parcels", 1, 0.35)
			got, err := ret.Retrieve(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			found := len(got) > 0 && got[0].ID == "dispatch"
			if found != tt.wantFound {
				t.Fatalf("found first: %v, want %v; got %v (verdict %q, answerability %.2f)", found, tt.wantFound, ids(got), q.Trace.Verdict, q.Trace.Answerability)
			}
			if !tt.wantFound {
				return
			}
			if !slices.Equal(got[0].Questions, tt.questions) {
				t.Errorf("returned chunk's questions = %q, want %q", got[0].Questions, tt.questions)
			}
			c := q.Trace.Candidates[0]
			qa := slices.Index(q.Trace.FeatureNames, "qa")
			if c.ChunkID != "dispatch" || c.KeywordRank != 1 || qa < 0 || c.Features[qa] < 0.5 || len(c.Missing) != 0 ||
				c.MatchedQuestion != "How fast do you dispatch parcels?" {
				t.Fatalf("trace candidate = %+v, want the chunk first on the keyword leg, its qa feature and matched question from the questions, nothing missing", c)
			}
			for _, other := range q.Trace.Candidates[1:] {
				if other.MatchedQuestion != "" {
					t.Errorf("candidate %s without questions has matched question %q", other.ChunkID, other.MatchedQuestion)
				}
			}
		})
	}
}
