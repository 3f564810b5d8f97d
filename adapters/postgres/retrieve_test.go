package postgres_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// srcSpec describes a source to create for a retrieval test.
type srcSpec struct {
	typ      domain.SourceType
	status   domain.SourceStatus
	name     string
	content  string
	question string
	answer   string
}

func textSource(name, content string) srcSpec {
	return srcSpec{typ: domain.SourceText, status: domain.SourceReady, name: name, content: content}
}

func qaSource(question, answer string) srcSpec {
	return srcSpec{typ: domain.SourceQA, status: domain.SourceReady, name: question, question: question, answer: answer}
}

func createSource(t *testing.T, store *postgres.Store, workspaceID, agentID string, spec srcSpec) domain.Source {
	t.Helper()
	src := domain.Source{
		ID: domain.NewID(domain.PrefixSource), WorkspaceID: workspaceID, AgentID: agentID,
		Type: spec.typ, Name: spec.name, Content: spec.content, Question: spec.question, Answer: spec.answer,
		Status: spec.status, CreatedAt: t0, UpdatedAt: t0,
	}
	if err := store.CreateSource(ctxT(t), &src); err != nil {
		t.Fatalf("CreateSource %q: %v", spec.name, err)
	}
	if spec.status == domain.SourceReady {
		indexWhole(t, store, src)
	}
	return src
}

// indexWhole completes the indexing of a source as one chunk whose id is the
// source's, so tests can compare retrieved chunks with sources.
func indexWhole(t *testing.T, store *postgres.Store, src domain.Source) {
	t.Helper()
	draft := domain.ChunkDraft{Heading: src.Name, Text: src.Content, Tokens: len(strings.Fields(src.Content))}
	if src.Type == domain.SourceQA {
		draft = domain.ChunkDraft{Text: src.Answer, Tokens: len(strings.Fields(src.Answer))}
	}
	chunk := domain.StoredChunk{ChunkDraft: draft, ID: src.ID, Question: src.Question, ContentHash: "hash-" + src.ID}
	ref := domain.SourceRef{WorkspaceID: src.WorkspaceID, SourceID: src.ID, Generation: src.Generation}
	result := domain.IndexResult{ContentHash: "hash-" + src.ID, Embedder: "test", ChunkCount: 1, TokenCount: draft.Tokens, At: t0}
	if _, ok, err := store.CompleteIndexing(ctxT(t), ref, result, []domain.StoredChunk{chunk}); err != nil || !ok {
		t.Fatalf("CompleteIndexing %q: ok %v, %v", src.Name, ok, err)
	}
}

func retrieve(t *testing.T, store *postgres.Store, workspaceID, agentID, text string, limit int) []domain.Chunk {
	t.Helper()
	chunks, err := store.SearchChunks(ctxT(t), workspaceID, agentID, text, limit)
	if err != nil {
		t.Fatalf("Retrieve(%q): %v", text, err)
	}
	for i := 1; i < len(chunks); i++ {
		if chunks[i].Score > chunks[i-1].Score {
			t.Errorf("Retrieve(%q): scores not best first: %v", text, scores(chunks))
		}
	}
	return chunks
}

func chunkIDs(chunks []domain.Chunk) []string {
	ids := make([]string, len(chunks))
	for i, c := range chunks {
		ids[i] = c.ID
	}
	return ids
}

func scores(chunks []domain.Chunk) []float64 {
	s := make([]float64, len(chunks))
	for i, c := range chunks {
		s[i] = c.Score
	}
	return s
}

// knowledgeBase is a small help centre used by several tests.
type knowledgeBase struct {
	refund, shipping, shippingQA, history, paypalQA domain.Source
}

func newKnowledgeBase(t *testing.T, store *postgres.Store, workspaceID, agentID string) knowledgeBase {
	t.Helper()
	return knowledgeBase{
		refund: createSource(t, store, workspaceID, agentID, textSource("Refund policy",
			"Refunds are accepted within 30 days of purchase. Contact support with your order number to get your money back.")),
		shipping: createSource(t, store, workspaceID, agentID, textSource("Shipping",
			"We ship worldwide. Shipping to remote places can take a long time, and shipping costs vary by carrier.")),
		shippingQA: createSource(t, store, workspaceID, agentID, qaSource("How long does shipping take?",
			"Three to five business days.")),
		history: createSource(t, store, workspaceID, agentID, textSource("Company history",
			"Founded in 2001 in a garage. Our first hire ran the refund desk.")),
		paypalQA: createSource(t, store, workspaceID, agentID, qaSource("Can I pay with PayPal?",
			"Yes, PayPal and all major cards.")),
	}
}

func TestRetrieveRanksRelevantSourcesFirst(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	kb := newKnowledgeBase(t, store, ws.ID, agent.ID)

	tests := []struct {
		name  string
		text  string
		want  []string // exactly these, in this order
		first string   // or at least this one first
	}{
		{name: "relevant text first", text: "How can I get a refund for my purchase?", first: kb.refund.ID},
		{name: "stemming", text: "refunding purchases", want: []string{kb.refund.ID, kb.history.ID}},
		{name: "question match beats text mention", text: "How long does shipping take?", want: []string{kb.shippingQA.ID, kb.shipping.ID}},
		{name: "question words in another order", text: "shipping: does it take long", first: kb.shippingQA.ID},
		{name: "one matching word among unknown ones", text: "refund xylophone quantum zebra", want: []string{kb.refund.ID, kb.history.ID}},
		{name: "one word", text: "paypal", want: []string{kb.paypalQA.ID}},
		{name: "case and punctuation", text: "PAYPAL???", want: []string{kb.paypalQA.ID}},
		{name: "more matching words rank higher", text: "refund money order support", first: kb.refund.ID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := retrieve(t, store, ws.ID, agent.ID, tt.text, 0)
			ids := chunkIDs(got)
			if tt.want != nil && !slices.Equal(ids, tt.want) {
				t.Errorf("Retrieve(%q) = %v (scores %v), want %v", tt.text, ids, scores(got), tt.want)
			}
			if tt.first != "" && (len(ids) == 0 || ids[0] != tt.first) {
				t.Errorf("Retrieve(%q) = %v (scores %v), want %s first", tt.text, ids, scores(got), tt.first)
			}
		})
	}
}

func TestRetrieveMapsChunks(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	kb := newKnowledgeBase(t, store, ws.ID, agent.ID)

	got := retrieve(t, store, ws.ID, agent.ID, "How long does shipping take?", 0)
	if len(got) != 2 {
		t.Fatalf("got %d chunks, want 2: %+v", len(got), got)
	}
	qa, text := got[0], got[1]
	if qa.Score <= text.Score || text.Score <= 0 {
		t.Errorf("scores = %v, want Q&A > text > 0", scores(got))
	}
	qa.Score, text.Score = 0, 0
	wantQA := domain.Chunk{
		ID: kb.shippingQA.ID, SourceID: kb.shippingQA.ID, SourceType: domain.SourceQA,
		DocumentName: "How long does shipping take?", Question: "How long does shipping take?",
		Text: "Three to five business days.",
	}
	wantText := domain.Chunk{
		ID: kb.shipping.ID, SourceID: kb.shipping.ID, SourceType: domain.SourceText,
		DocumentName: "Shipping", Text: kb.shipping.Content,
	}
	if !reflect.DeepEqual(qa, wantQA) {
		t.Errorf("Q&A chunk = %+v, want %+v", qa, wantQA)
	}
	if !reflect.DeepEqual(text, wantText) {
		t.Errorf("text chunk = %+v, want %+v", text, wantText)
	}
}

// A long guide that repeats the words of a question still loses to the Q&A
// whose question it is.
func TestRetrieveQuestionMatchBeatsRepeatedMentions(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	guide := createSource(t, store, ws.ID, agent.ID, textSource("Shipping guide: how long shipping takes",
		strings.Repeat("Shipping takes long when carriers are busy; how long it takes depends on the carrier. ", 20)))
	qa := createSource(t, store, ws.ID, agent.ID, qaSource("How long does shipping take?", "Three to five business days."))

	got := chunkIDs(retrieve(t, store, ws.ID, agent.ID, "how long does shipping take", 0))
	if want := []string{qa.ID, guide.ID}; !slices.Equal(got, want) {
		t.Errorf("Retrieve = %v, want the Q&A %s before the guide %s", got, qa.ID, guide.ID)
	}
}

func TestRetrieveNothingToSearchFor(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	newKnowledgeBase(t, store, ws.ID, agent.ID)
	// A source made of stopwords only has an empty search vector; it must
	// not match empty queries either.
	createSource(t, store, ws.ID, agent.ID, textSource("The", "and the of a an is it"))

	for _, text := range []string{
		"", "   \n\t", "the", "the and of is it", "What is it?", "?!...", "- * / ; , .", "«»—…", "unknownword",
	} {
		t.Run(strconv.Quote(text), func(t *testing.T) {
			if got := retrieve(t, store, ws.ID, agent.ID, text, 0); len(got) != 0 {
				t.Errorf("Retrieve(%q) = %v, want nothing", text, chunkIDs(got))
			}
		})
	}
}

// User text never reaches SQL or the tsquery syntax: operators, quotes and
// SQL are words or nothing.
func TestRetrieveHostileInput(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	kb := newKnowledgeBase(t, store, ws.ID, agent.ID)

	tests := []struct {
		text      string
		wantFirst string // "" means nothing must be found
	}{
		{text: `'); DROP TABLE sources; --`},
		{text: `a & b | !c`},
		{text: `:*`},
		{text: `!`},
		{text: `'`},
		{text: `''`},
		{text: `\`},
		{text: `\'`},
		{text: `(`},
		{text: `<->`},
		{text: `<2>`},
		{text: `a:A`},
		{text: `$1`},
		{text: `refund:*`, wantFirst: kb.refund.ID},
		{text: `refund & !policy`, wantFirst: kb.refund.ID},
		{text: `!refund`, wantFirst: kb.refund.ID},
		{text: `'refund' | 'x`, wantFirst: kb.refund.ID},
		{text: `refund' OR '1'='1`, wantFirst: kb.refund.ID},
		{text: `refund\`, wantFirst: kb.refund.ID},
		{text: `"refund <-> policy"`, wantFirst: kb.refund.ID},
		{text: "refund\x00policy", wantFirst: kb.refund.ID},
		{text: "\xff\xfe refund", wantFirst: kb.refund.ID},
		{text: "refund " + strings.Repeat("x", 100_000), wantFirst: kb.refund.ID}, // the parser drops words over 2 kB
		{text: strings.Repeat("refund ", 20_000), wantFirst: kb.refund.ID},
	}
	for _, tt := range tests {
		name := tt.text
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(strconv.Quote(name), func(t *testing.T) {
			got := chunkIDs(retrieve(t, store, ws.ID, agent.ID, tt.text, 0))
			switch {
			case tt.wantFirst == "" && len(got) != 0:
				t.Errorf("found %v, want nothing", got)
			case tt.wantFirst != "" && (len(got) == 0 || got[0] != tt.wantFirst):
				t.Errorf("found %v, want %s first", got, tt.wantFirst)
			}
		})
	}
	var n int64
	if err := db.Raw(`SELECT count(*) FROM sources`).Scan(&n).Error; err != nil || n != 5 {
		t.Errorf("sources after hostile queries: %d, %v; want 5", n, err)
	}
}

func TestRetrieveTenantIsolation(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agentA := newAgent(t, store, wsA.ID, "support", t0)
	siblingA := newAgent(t, store, wsA.ID, "sales", t0)
	agentB := newAgent(t, store, wsB.ID, "support", t0)
	spec := textSource("Refund policy", "Refunds are accepted within 30 days.")
	mine := createSource(t, store, wsA.ID, agentA.ID, spec)
	sibling := createSource(t, store, wsA.ID, siblingA.ID, spec)
	other := createSource(t, store, wsB.ID, agentB.ID, spec)

	tests := []struct {
		name                 string
		workspaceID, agentID string
		want                 []string
	}{
		{"own agent", wsA.ID, agentA.ID, []string{mine.ID}},
		{"sibling agent", wsA.ID, siblingA.ID, []string{sibling.ID}},
		{"other workspace", wsB.ID, agentB.ID, []string{other.ID}},
		{"other workspace's agent under our workspace", wsA.ID, agentB.ID, nil},
		{"our agent under another workspace", wsB.ID, agentA.ID, nil},
		{"unknown agent", wsA.ID, domain.NewID(domain.PrefixAgent), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chunkIDs(retrieve(t, store, tt.workspaceID, tt.agentID, "refund", 0))
			if !slices.Equal(got, tt.want) && (len(got) != 0 || len(tt.want) != 0) {
				t.Errorf("Retrieve = %v, want %v", got, tt.want)
			}
		})
	}

	for _, q := range []ports.RetrievalQuery{
		{AgentID: agentA.ID, Text: "refund"},
		{WorkspaceID: wsA.ID, Text: "refund"},
	} {
		if got, err := store.SearchChunks(ctxT(t), q.WorkspaceID, q.AgentID, q.Text, 0); err == nil {
			t.Errorf("Retrieve(%+v) = %v, want an error for the missing scope", q, chunkIDs(got))
		}
	}
}

func TestRetrieveOnlyReadySources(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	var ready []string
	for _, status := range []domain.SourceStatus{domain.SourcePending, domain.SourceIndexing, domain.SourceReady, domain.SourceFailed} {
		for _, spec := range []srcSpec{
			textSource("Refund policy", "Refunds are accepted within 30 days."),
			qaSource("Can I get a refund?", "Yes, within 30 days."),
		} {
			spec.status = status
			src := createSource(t, store, ws.ID, agent.ID, spec)
			if status == domain.SourceReady {
				ready = append(ready, src.ID)
			}
		}
	}
	got := chunkIDs(retrieve(t, store, ws.ID, agent.ID, "refund", 0))
	slices.Sort(got)
	slices.Sort(ready)
	if !slices.Equal(got, ready) {
		t.Errorf("Retrieve = %v, want only the READY sources %v", got, ready)
	}
}

func TestRetrieveLimit(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	err := db.Exec(`INSERT INTO sources (id, workspace_id, agent_id, type, name, content, status, created_at, updated_at)
		SELECT 'src_limit' || g, ?, ?, 'text', 'Invoice guide ' || g,
			'How to download invoice number ' || g || repeat(' invoice', g % 7), 'READY', ?, ?
		FROM generate_series(1, 60) AS g`, ws.ID, agent.ID, micro(t0), micro(t0)).Error
	if err != nil {
		t.Fatal(err)
	}
	err = db.Exec(`INSERT INTO chunks (id, workspace_id, agent_id, source_id, ordinal, heading, content, token_count, content_hash, embedder, created_at)
		SELECT id, workspace_id, agent_id, id, 0, name, content, 20, 'hash-' || id, 'test', created_at FROM sources WHERE agent_id = ?`, agent.ID).Error
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ limit, want int }{
		{limit: 0, want: postgres.DefaultRetrieveLimit},
		{limit: -3, want: postgres.DefaultRetrieveLimit},
		{limit: 1, want: 1},
		{limit: 12, want: 12},
		{limit: 500, want: postgres.MaxRetrieveLimit},
	}
	for _, tt := range tests {
		got := retrieve(t, store, ws.ID, agent.ID, "download invoices", tt.limit)
		if len(got) != tt.want {
			t.Errorf("Limit %d: got %d chunks, want %d", tt.limit, len(got), tt.want)
		}
	}
	// The limit keeps the best: the first 12 are the first 12 of 50.
	top12 := chunkIDs(retrieve(t, store, ws.ID, agent.ID, "download invoices", 12))
	top50 := chunkIDs(retrieve(t, store, ws.ID, agent.ID, "download invoices", 50))
	if !slices.Equal(top12, top50[:12]) {
		t.Errorf("top 12 = %v, want the prefix of the top 50 %v", top12, top50[:12])
	}
}

// TestRetrievePlanUsesSearchIndex loads 2,000 sources of realistic size into
// one agent, next to another workspace's 2,000, and checks that retrieval
// finds its candidates through the GIN index rather than by scanning sources,
// and that a word found in hundreds of sources does not crowd the best
// source out of the bounded candidate set.
func TestRetrievePlanUsesSearchIndex(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	other, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	otherAgent := newAgent(t, store, other.ID, "support", t0)

	load := func(workspaceID, agentID, prefix string, n int) {
		t.Helper()
		// Each source is about one of eight subjects and one of 97 topics,
		// with some 1.8 kB of text drawn from a help-centre vocabulary, which
		// compresses about as well as prose. One in five is a Q&A; one in
		// fifty FAILED. chr(63) is a question mark, which gorm would bind.
		err := db.Exec(`WITH v AS (
				SELECT ARRAY['account','billing','invoice','password','login','export','import','webhook','team',
					'member','role','permission','plan','upgrade','download','report','setting','profile','email',
					'notification','integration','slack','api','token','key','secret','limit','quota','storage','file',
					'folder','share','link','public','private','delete','restore','backup','sync','device','mobile',
					'browser','error','issue','support','ticket','chat','agent','widget','theme','color','language',
					'timezone','calendar','schedule','payment','card','refund','tax','receipt'] AS words,
					ARRAY['billing','accounts','passwords','exports','integrations','webhooks','teams','invoices'] AS subjects
			)
			INSERT INTO sources (id, workspace_id, agent_id, type, name, content, question, answer, status, created_at, updated_at)
			SELECT ? || g, ?, ?, CASE WHEN g % 5 = 0 THEN 'qa' ELSE 'text' END,
				'Article ' || g || ' about ' || v.subjects[1 + g % 8],
				CASE WHEN g % 5 = 0 THEN '' ELSE 'This article explains ' || v.subjects[1 + g % 8] || ' for topic' || (g % 97) || '. '
					|| (SELECT string_agg(v.words[1 + (g * 7919 + i * 104729 + i * i * 31) % 60], ' ') FROM generate_series(1, 220) AS i) END,
				CASE WHEN g % 5 = 0 THEN 'How do I manage ' || v.subjects[1 + g % 8] || ' for topic' || (g % 97) || chr(63) ELSE '' END,
				CASE WHEN g % 5 = 0 THEN 'Open the settings page and follow the steps for topic' || (g % 97) || '.' ELSE '' END,
				CASE WHEN g % 50 = 7 THEN 'FAILED' ELSE 'READY' END, ?, ?
			FROM generate_series(1, ?) AS g, v`,
			prefix, workspaceID, agentID, micro(t0), micro(t0), n).Error
		if err != nil {
			t.Fatal(err)
		}
		// Indexed sources have one chunk each, named like their source.
		err = db.Exec(`INSERT INTO chunks (id, workspace_id, agent_id, source_id, ordinal, heading, question, content,
				token_count, content_hash, embedder, created_at)
			SELECT id, workspace_id, agent_id, id, 0, CASE WHEN type = 'text' THEN name ELSE '' END, question,
				CASE WHEN type = 'text' THEN content ELSE answer END, 300, 'hash-' || id, 'test', created_at
			FROM sources WHERE agent_id = ? AND status = 'READY'`, agentID).Error
		if err != nil {
			t.Fatal(err)
		}
	}
	load(ws.ID, agent.ID, "src_a", 2000)
	load(other.ID, otherAgent.ID, "src_b", 2000)
	// The best answer: its question shares "password" and "topic13" with the
	// query. Hundreds of sources contain "password", about 20 "topic13".
	best := createSource(t, store, ws.ID, agent.ID, qaSource("How can I change the password for topic13?",
		"Open Settings, then Security, and choose Change password."))
	// The steady state autovacuum keeps: fresh statistics, and the GIN
	// index's own counts, which only VACUUM updates; without them the
	// planner prices any GIN scan for an unknown query pessimistically.
	if err := db.Exec(`VACUUM ANALYZE chunks`).Error; err != nil {
		t.Fatal(err)
	}

	const text = "How do I reset passwords for topic13?"
	plan := explainRetrieve(t, db, retrieveQueryText(t), text, ws.ID, agent.ID, postgres.DefaultRetrieveLimit)
	t.Logf("EXPLAIN ANALYZE of the search query over 2,000 chunks in one agent:\n%s", plan)
	if !strings.Contains(plan, "Bitmap Index Scan on chunks_search_idx") {
		t.Errorf("plan does not use the GIN index chunks_search_idx")
	}
	if strings.Contains(plan, "Seq Scan on chunks") {
		t.Errorf("plan scans chunks sequentially")
	}

	start := time.Now()
	got := retrieve(t, store, ws.ID, agent.ID, text, 0)
	t.Logf("Retrieve took %v: %v, scores %v", time.Since(start), chunkIDs(got), scores(got))
	if len(got) != postgres.DefaultRetrieveLimit {
		t.Fatalf("got %d chunks, want %d", len(got), postgres.DefaultRetrieveLimit)
	}
	if got[0].ID != best.ID {
		t.Errorf("best chunk = %s %q, want %s %q", got[0].ID, got[0].DocumentName, best.ID, best.Name)
	}
	// The rest contain the rare word too: about 20 sources mention topic13,
	// against hundreds for password.
	for _, c := range got {
		if !strings.Contains(c.Text+c.Question, "topic13") {
			t.Errorf("chunk %s (%q) lacks topic13: the common word crowded out the rare one", c.ID, c.DocumentName)
		}
	}
	for _, c := range got {
		if c.ID != best.ID && !strings.HasPrefix(c.ID, "src_a") {
			t.Errorf("chunk %s is not the agent's", c.ID)
		}
	}
}

// retrieveQueryText reads the retrieval query from retrieve.go, so the test
// explains exactly the text the Store runs without widening the package's
// API for it.
func retrieveQueryText(t *testing.T) string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "retrieve.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if name.Name != "searchSQL" {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatal("searchSQL is not a single string literal")
				}
				query, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				return query
			}
		}
	}
	t.Fatal("searchSQL not found in retrieve.go")
	return ""
}

// explainRetrieve runs EXPLAIN (ANALYZE, BUFFERS) on query with args.
func explainRetrieve(t *testing.T, db *gorm.DB, query string, args ...any) string {
	t.Helper()
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := sqlDB.QueryContext(ctxT(t), "EXPLAIN (ANALYZE, BUFFERS) "+query, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
