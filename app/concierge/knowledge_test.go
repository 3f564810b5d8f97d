package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// helpSite is a small local website: a home page linking to two articles,
// one of them disallowed by robots.txt, and a page elsewhere that is not linked.
func helpSite(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var requests atomic.Int32
	page := func(title, body string, links ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>%s</title></head><body><main><h1>%s</h1><p>%s</p>", title, title, body)
		for _, l := range links {
			fmt.Fprintf(&b, `<a href="%s">%s</a> `, l, l)
		}
		b.WriteString("</main></body></html>")
		return b.String()
	}
	pages := map[string]string{
		"/": page("Orbit Help Center", "Welcome to the Orbit help center. Browse the articles below to learn how Orbit telescopes work.",
			"/warranty", "/private-notes"),
		"/warranty": page("Telescope warranty", "Every Orbit telescope carries a seven year warranty covering the mirror and the mount. "+
			"To claim it, email the serial number engraved under the eyepiece holder to our repair desk."),
		"/private-notes": page("Internal notes", "The supplier discount code is NEBULA-42."),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private-notes\n")
			return
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

func TestKnowledgeSourcesOfEveryType(t *testing.T) {
	site, _ := helpSite(t)
	// The crawler may read 127.0.0.1 here only: the test site is local.
	s := newStack(t, stackOptions{withWorker: true, env: map[string]string{"CONCIERGE_CRAWL_ALLOW_PRIVATE_ADDRESSES_FOR_TESTS": "true"}})
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	auth := tn.auth()

	docx, err := os.ReadFile("../../adapters/ingest/testdata/sample.docx")
	if err != nil {
		t.Fatal(err)
	}
	md := []byte("# Returns\n\nUnused lenses can be returned within 45 days.\n\n## Refund timing\n\nRefunds reach your card within 4 business days.\n")
	for _, up := range []struct {
		name    string
		content []byte
	}{{"returns.md", md}, {"sample.docx", docx}} {
		r := s.upload(tn, "support", map[string]string{"type": "file"}, up.name, up.content)
		s.mustStatus(r, 201)
		if src := r.JSON(t); src["type"] != "file" || src["filename"] != up.name || src["name"] != up.name || src["status"] != "PENDING" {
			t.Fatalf("file source = %v", src)
		}
	}
	s.mustStatus(s.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "url", "url": site.URL + "/warranty"}, auth), 201)
	r := s.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "website", "name": "Orbit help", "url": site.URL + "/", "maxPages": 10, "maxDepth": 2}, auth)
	s.mustStatus(r, 201)
	website := r.JSON(t)
	if website["maxPages"] != 10.0 || website["maxDepth"] != 2.0 || website["url"] != site.URL+"/" {
		t.Fatalf("website source = %v", website)
	}

	byType := map[string]map[string]any{}
	for _, src := range s.waitIndexed(tn, "support") {
		if src["status"] != "READY" {
			t.Fatalf("source failed: %v", src)
		}
		byType[src["type"].(string)+":"+fmt.Sprint(src["filename"])] = src
	}
	if web := byType["website:<nil>"]; web["pageCount"] != 2.0 {
		// The home page and the warranty page; robots.txt keeps the crawler
		// out of /private-notes.
		t.Fatalf("website pages = %v, want 2", web["pageCount"])
	}

	// Retrieval finds each kind of source, with web citations carrying the page URL.
	cases := []struct {
		query, wantType, wantURL string
	}{
		{"how long do I have to return lenses?", "file", ""},
		{"telescope warranty claim serial number", "", site.URL + "/warranty"},
	}
	for _, tc := range cases {
		r := s.do("POST", "/api/v2/agents/support/retrieve", map[string]any{"query": tc.query}, auth)
		s.mustStatus(r, 200)
		var out struct {
			Results []struct {
				SourceType, DocumentName, Text string
				URL                            *string
				Score                          float64
			}
			Trace struct {
				Method     string
				Candidates []struct{ Kept bool }
			}
		}
		r.decode(t, &out)
		if len(out.Results) == 0 {
			t.Fatalf("retrieve %q found nothing: %s", tc.query, r.Body)
		}
		top := out.Results[0]
		if tc.wantType != "" && top.SourceType != tc.wantType {
			t.Errorf("retrieve %q: top result from a %s source, want %s: %s", tc.query, top.SourceType, tc.wantType, r.Body)
		}
		if tc.wantURL != "" && (top.URL == nil || *top.URL != tc.wantURL) {
			t.Errorf("retrieve %q: top result URL %v, want %s", tc.query, top.URL, tc.wantURL)
		}
		if out.Trace.Method != "hybrid" && out.Trace.Method != "keyword" {
			t.Errorf("trace method = %q", out.Trace.Method)
		}
		if strings.Contains(string(r.Body), "NEBULA-42") {
			t.Fatal("a page disallowed by robots.txt was indexed")
		}
	}

	// A chat answer's trace is available for its message.
	resp, answer := s.chat(tn, map[string]any{"agent": "support", "message": "How long is the telescope warranty?"})
	s.mustStatus(resp, 200)
	if answer.IsFallback || len(answer.Citations) == 0 {
		t.Fatalf("answer = %+v", answer)
	}
	tr := s.do("GET", "/api/v2/conversations/"+answer.SessionID+"/messages/"+*answer.MessageID+"/trace", nil, auth)
	s.mustStatus(tr, 200)
	trace := tr.JSON(t)
	if trace["query"] != "How long is the telescope warranty?" || len(trace["candidates"].([]any)) == 0 {
		t.Fatalf("trace = %s", tr.Body)
	}
	// The stored trace says why the agent answered: the question's focus,
	// its answerability against the threshold, and each candidate's
	// reranking features by name.
	if a, ok := trace["answerability"].(float64); !ok || a < trace["threshold"].(float64) || !strings.HasPrefix(trace["verdict"].(string), "answer:") {
		t.Fatalf("answerability %v, threshold %v, verdict %v", trace["answerability"], trace["threshold"], trace["verdict"])
	}
	focus := map[string]bool{}
	for _, f := range trace["focus"].([]any) {
		focus[f.(map[string]any)["word"].(string)] = true
	}
	if !focus["telescope"] || !focus["warranty"] {
		t.Fatalf("focus = %v", trace["focus"])
	}
	best := trace["candidates"].([]any)[0].(map[string]any)
	features, _ := best["features"].(map[string]any)
	if rel, _ := best["relevance"].(float64); rel <= 0 || rel > 1 || features["coverage"] == nil || features["window"] == nil || len(features) != 12 {
		t.Fatalf("best candidate = %v", best)
	}
	// And what the answerability was computed from, by name: here most of
	// the question is on the best page ("long" is in no passage) and no
	// name is missing.
	if af, _ := trace["answerFeatures"].(map[string]any); len(af) != 5 || af["page"].(float64) < 0.5 || af["missingName"] != 0.0 {
		t.Fatalf("answerFeatures = %v", trace["answerFeatures"])
	}

	// A near miss falls back, and its trace names what was missing.
	resp, miss := s.chat(tn, map[string]any{"agent": "support", "message": "Does the warranty cover telescopes bought in Canada?"})
	s.mustStatus(resp, 200)
	if !miss.IsFallback || miss.FallbackReason == nil || *miss.FallbackReason != "NO_RELEVANT_KNOWLEDGE" {
		t.Fatalf("near miss answered: %+v", miss)
	}
	missTrace := s.do("GET", "/api/v2/conversations/"+miss.SessionID+"/messages/"+*miss.MessageID+"/trace", nil, auth).JSON(t)
	if !slices.Contains(missTrace["missing"].([]any), any("canada")) || !strings.HasPrefix(missTrace["verdict"].(string), "fallback:") {
		t.Fatalf("near miss trace: missing %v, verdict %v", missTrace["missing"], missTrace["verdict"])
	}
	// Why, in the decision's own terms: "Canada" is written as a name
	// and the best passage does not hold it.
	if af, _ := missTrace["answerFeatures"].(map[string]any); af["missingName"] != 1.0 {
		t.Fatalf("near miss answerFeatures = %v", missTrace["answerFeatures"])
	}
	if r := s.do("GET", "/api/v2/conversations/"+answer.SessionID+"/messages/msg_00000000000000000000000000/trace", nil, auth); r.Status != 404 {
		t.Fatalf("trace of an unknown message: %d", r.Status)
	}

	// Re-indexing unchanged content keeps it READY; deleting a source takes
	// its chunks out of retrieval at once.
	id := website["id"].(string)
	rr := s.do("POST", "/api/v2/agents/support/sources/"+id+"/reindex", nil, auth)
	s.mustStatus(rr, 202)
	if st := rr.JSON(t)["status"]; st != "PENDING" {
		t.Fatalf("reindex status = %v", st)
	}
	s.waitIndexed(tn, "support")
	for _, sid := range []string{id, byType["url:<nil>"]["id"].(string)} {
		s.mustStatus(s.do("DELETE", "/api/v2/agents/support/sources/"+sid, nil, auth), 204)
	}
	r = s.do("POST", "/api/v2/agents/support/retrieve", map[string]any{"query": "telescope warranty claim serial number"}, auth)
	s.mustStatus(r, 200)
	if strings.Contains(string(r.Body), site.URL) {
		t.Fatalf("deleted web sources are still retrieved: %s", r.Body)
	}
}

func TestKnowledgeRefusals(t *testing.T) {
	// The guard is on: a URL on a private address fails its indexing with a
	// reason, without ever being fetched.
	site, requests := helpSite(t)
	s := newStack(t, stackOptions{withWorker: true})
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	auth := tn.auth()

	s.mustStatus(s.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "url", "url": site.URL + "/warranty"}, auth), 201)
	s.mustStatus(s.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "url", "url": "http://169.254.169.254/latest/meta-data/"}, auth), 201)
	// A file whose content is not what its name says fails too.
	s.mustStatus(s.upload(tn, "support", map[string]string{"type": "file", "name": "Broken"}, "broken.pdf", []byte("%PDF-1.7 this is not a PDF")), 201)
	for _, src := range s.waitIndexed(tn, "support") {
		reason, _ := src["statusReason"].(string)
		if src["status"] != "FAILED" || reason == "" {
			t.Fatalf("source = %v, want FAILED with a reason", src)
		}
		if strings.Contains(reason, "refused") != (src["type"] == "url") {
			t.Errorf("reason %q for %v", reason, src["type"])
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the local site received %d requests with the guard on", n)
	}

	tests := []struct {
		name     string
		fields   map[string]string
		filename string
		content  []byte
		status   int
		field    string
	}{
		{"unsupported extension", map[string]string{"type": "file"}, "deck.pptx", []byte("x"), 400, "file"},
		{"empty file", map[string]string{"type": "file"}, "empty.md", nil, 400, "file"},
		{"no file part", map[string]string{"type": "file"}, "", nil, 400, "file"},
		{"wrong type", map[string]string{"type": "text"}, "a.md", []byte("# A"), 400, "type"},
		{"unknown field", map[string]string{"type": "file", "colour": "red"}, "a.md", []byte("# A"), 400, "colour"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.upload(tn, "support", tc.fields, tc.filename, tc.content)
			if r.Status != tc.status || r.errorCode(t) != "VALIDATION_ERROR" {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
			if _, ok := r.JSON(t)["error"].(map[string]any)["details"].(map[string]any)[tc.field]; !ok {
				t.Fatalf("details do not name %s: %s", tc.field, r.Body)
			}
		})
	}
	big := make([]byte, domain.MaxSourceFileBytes+1)
	if r := s.upload(tn, "support", map[string]string{"type": "file"}, "big.txt", big); r.Status != 413 && r.Status != 400 {
		t.Fatalf("a file over 20 MiB: %d %s", r.Status, r.Body)
	}
	// Retrieval settings are validated like every other agent field.
	for _, body := range []map[string]any{{"retrievalTopK": 0}, {"retrievalTopK": 21}, {"retrievalThreshold": 1.5}} {
		if r := s.do("PATCH", "/api/v2/agents/support", body, auth); r.Status != 400 {
			t.Fatalf("PATCH %v: %d", body, r.Status)
		}
	}
	if r := s.do("POST", "/api/v2/agents/support/retrieve", map[string]any{"query": "  "}, auth); r.Status != 400 {
		t.Fatalf("blank query: %d", r.Status)
	}
}

// An API pod that has an agent's index in memory serves a change indexed by a
// worker on another process at once: the worker's announcement over Redis
// drops the index (and the cached agent) on every pod.
func TestKnowledgeChangeReachesOtherPods(t *testing.T) {
	// Pod A also runs the worker; pod B only answers (agent cache TTL of a
	// minute, so only the announcement can refresh it within the test).
	podA := newStack(t, stackOptions{withWorker: true, env: map[string]string{"CONCIERGE_AGENT_CACHE_TTL": "1m"}})
	podB := newStack(t, stackOptions{env: map[string]string{
		"CONCIERGE_DATABASE_URL":    podA.env["CONCIERGE_DATABASE_URL"],
		"CONCIERGE_REDIS_URL":       podA.env["CONCIERGE_REDIS_URL"],
		"CONCIERGE_AGENT_CACHE_TTL": "1m",
	}})
	tn := podA.newTenant(domain.PlanStandard)
	podA.createAgent(tn, "support")
	podA.mustStatus(podA.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "text", "name": "Refunds", "content": "Refunds take five business days."}, tn.auth()), 201)
	podA.waitIndexed(tn, "support")

	retrieveOnB := func(query string) (results []map[string]any, method string) {
		r := podB.do("POST", "/api/v2/agents/support/retrieve", map[string]any{"query": query}, tn.auth())
		podB.mustStatus(r, 200)
		var out struct {
			Results []map[string]any
			Trace   struct{ Method string }
		}
		r.decode(t, &out)
		return out.Results, out.Trace.Method
	}
	// Pod B loads the agent's index.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, method := retrieveOnB("refunds"); method == "hybrid" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pod B never loaded the index")
		}
	}
	if got, _ := retrieveOnB("telescope warranty"); len(got) != 0 {
		t.Fatalf("found %v before the source exists", got)
	}
	podA.mustStatus(podA.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "text", "name": "Warranty", "content": "Every telescope has a seven year warranty."}, tn.auth()), 201)
	podA.waitIndexed(tn, "support")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, method := retrieveOnB("telescope warranty")
		if len(got) > 0 && got[0]["documentName"] == "Warranty" && method == "hybrid" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod B still answers from its old index: %v (%s)", got, method)
		}
	}
}

// TestChangingTheEmbedderReembeds: a deployment that moves to another
// embedder (here the local one at another size, which changes its id)
// re-embeds every source in the background, and retrieval answers with the
// new vectors.
func TestChangingTheEmbedderReembeds(t *testing.T) {
	before := newStack(t, stackOptions{withWorker: true})
	tn := before.newTenant(domain.PlanStandard)
	before.createAgent(tn, "support")
	before.mustStatus(before.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "text", "name": "Warranty", "content": "Every telescope has a seven year warranty."}, tn.auth()), 201)
	before.mustStatus(before.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "qa", "name": "Shipping", "question": "Do you ship abroad?", "answer": "We ship to every country in Europe."}, tn.auth()), 201)
	before.waitIndexed(tn, "support")
	embedders := func(s *stack) []string {
		var ids []string
		if err := s.sys.db.Gorm.Raw("SELECT DISTINCT embedder FROM chunks ORDER BY 1").Scan(&ids).Error; err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := embedders(before); !slices.Equal(got, []string{"local-hash-v1-384"}) {
		t.Fatalf("embedders before the change = %v", got)
	}
	before.shutdown()

	// The same database and queue, served and worked by the new release.
	after := newStack(t, stackOptions{withWorker: true, env: map[string]string{
		"CONCIERGE_DATABASE_URL":               before.env["CONCIERGE_DATABASE_URL"],
		"CONCIERGE_REDIS_URL":                  before.env["CONCIERGE_REDIS_URL"],
		"CONCIERGE_LOCAL_EMBEDDING_DIMENSIONS": "128",
	}})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got := embedders(after); slices.Equal(got, []string{"local-hash-v1-128"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chunks still embedded by %v after 30 s", embedders(after))
		}
	}
	for _, src := range after.waitIndexed(tn, "support") {
		if src["status"] != "READY" {
			t.Fatalf("source after re-embedding: %v", src)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := after.do("POST", "/api/v2/agents/support/retrieve", map[string]any{"query": "telescope warranty"}, tn.auth())
		after.mustStatus(r, 200)
		var out struct {
			Results []struct{ DocumentName string }
			Trace   struct {
				Method   string
				Embedder *string
			}
		}
		r.decode(t, &out)
		if out.Trace.Method == "hybrid" {
			if out.Trace.Embedder == nil || *out.Trace.Embedder != "local-hash-v1-128" {
				t.Fatalf("trace embedder = %v, want local-hash-v1-128", out.Trace.Embedder)
			}
			if len(out.Results) == 0 || out.Results[0].DocumentName != "Warranty" {
				t.Fatalf("retrieval with the new embedder: %s", r.Body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retrieval never used the re-embedded index: %s", r.Body)
		}
	}
}
