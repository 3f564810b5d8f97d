package main

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/workers"
)

// crawlSite is a website on 127.0.0.1 for crawls that take their time: a
// home page linking to pages /p/0 ... /p/<n-1>, each with words of its own.
// Requests for gated paths wait until the gate opens (or their client gives
// up); the site counts requests per path and knows how many wait.
type crawlSite struct {
	*httptest.Server
	robots string
	gated  func(path string) bool

	mu        sync.Mutex
	requests  map[string]int
	total     int
	waiting   int
	cancelled int
	gate      chan struct{}
	opened    bool
}

func newCrawlSite(t testing.TB, pages int, robots string, gated func(path string) bool) *crawlSite {
	t.Helper()
	s := &crawlSite{robots: robots, gated: gated, requests: map[string]int{}, gate: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.URL.Path]++
		s.total++
		held := s.gated != nil && s.gated(r.URL.Path) && !s.opened
		if held {
			s.waiting++
		}
		s.mu.Unlock()
		if held {
			select {
			case <-s.gate:
			case <-r.Context().Done():
				s.mu.Lock()
				s.cancelled++
				s.waiting--
				s.mu.Unlock()
				return
			}
			s.mu.Lock()
			s.waiting--
			s.mu.Unlock()
		}
		s.serve(w, r, pages)
	}))
	t.Cleanup(func() {
		s.open()
		s.Close()
	})
	return s
}

func (s *crawlSite) serve(w http.ResponseWriter, r *http.Request, pages int) {
	if r.URL.Path == "/robots.txt" {
		fmt.Fprint(w, s.robots)
		return
	}
	var title, body string
	var links []string
	switch {
	case r.URL.Path == "/":
		title, body = "Orbit manual", "Welcome to the Orbit telescope manual. Every chapter below covers one part of the telescope."
		for i := range pages {
			links = append(links, fmt.Sprintf("/p/%d", i))
		}
	case strings.HasPrefix(r.URL.Path, "/p/"):
		n := strings.TrimPrefix(r.URL.Path, "/p/")
		title = "Chapter " + n
		body = fmt.Sprintf("Chapter %s of the Orbit manual explains the telescope part coded orbitpart%s: how to clean it, adjust it and replace it.", n, n)
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<html><head><title>%s</title></head><body><main><h1>%s</h1><p>%s</p>", title, title, body)
	for _, l := range links {
		fmt.Fprintf(w, `<a href="%s">%s</a> `, l, l)
	}
	fmt.Fprint(w, "</main></body></html>")
}

// open lets every held and future request through.
func (s *crawlSite) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.opened {
		s.opened = true
		close(s.gate)
	}
}

func (s *crawlSite) counts() (perPath map[string]int, total, waiting, cancelled int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests), s.total, s.waiting, s.cancelled
}

func (s *crawlSite) waitingNow() int {
	_, _, waiting, _ := s.counts()
	return waiting
}

// crawlEnv lets the crawler read the local site.
var crawlEnv = map[string]string{"CONCIERGE_CRAWL_ALLOW_PRIVATE_ADDRESSES_FOR_TESTS": "true"}

func withEnv(base map[string]string, more map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, more)
	return out
}

// addWebsite creates a website source of the agent and returns its id.
func (s *stack) addWebsite(tn tenant, slug, url string, maxPages int) string {
	s.t.Helper()
	r := s.do("POST", "/api/v2/agents/"+slug+"/sources", map[string]any{"type": "website", "url": url, "maxPages": maxPages, "maxDepth": 1}, tn.auth())
	s.mustStatus(r, 201)
	return r.JSON(s.t)["id"].(string)
}

func (s *stack) source(tn tenant, slug, id string) map[string]any {
	s.t.Helper()
	r := s.do("GET", "/api/v2/agents/"+slug+"/sources/"+id, nil, tn.auth())
	s.mustStatus(r, 200)
	return r.JSON(s.t)
}

// waitSource waits until the source is READY or FAILED and returns it.
func (s *stack) waitSource(tn tenant, slug, id string, timeout time.Duration) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		src := s.source(tn, slug, id)
		if st := src["status"]; st == "READY" || st == "FAILED" {
			return src
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("source still %v after %s: %v", src["status"], timeout, src)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitJobGone waits until the index task of the source's generation is no
// longer queued, running or scheduled: its job returned for good.
func (s *stack) waitJobGone(sourceID string, generation int, timeout time.Duration) {
	s.t.Helper()
	in := asynq.NewInspector(s.sys.redisOpt)
	defer in.Close()
	id := fmt.Sprintf("%s:%s:%d", workers.TypeKnowledgeIndex, sourceID, generation)
	deadline := time.Now().Add(timeout)
	for {
		_, err := in.GetTaskInfo(workers.QueueKnowledge, id)
		if errors.Is(err, asynq.ErrTaskNotFound) {
			return
		}
		if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
			s.t.Fatal(err)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the index job of %s generation %d still runs after %s", sourceID, generation, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crawlRows counts what the crawl log and the index hold for a source.
func (s *stack) crawlRows(sourceID string) (progress, steps, chunks int64) {
	s.t.Helper()
	if err := s.sys.db.Gorm.Raw(`SELECT (SELECT count(*) FROM crawl_progress WHERE source_id = ?), (SELECT count(*) FROM crawl_steps WHERE source_id = ?),
    (SELECT count(*) FROM chunks WHERE source_id = ?)`, sourceID, sourceID, sourceID).Row().Scan(&progress, &steps, &chunks); err != nil {
		s.t.Fatal(err)
	}
	return progress, steps, chunks
}

// Crawls that hold every index slot, blocked on a site that does not
// answer, never delay a webhook message: it is processed while they are
// still blocked. (With one pool of worker slots for every queue, the crawls
// held all of them and the message waited for the site.)
func TestWebhooksAreProcessedWhileCrawlsHoldEveryIndexSlot(t *testing.T) {
	site := newCrawlSite(t, 3, "", func(path string) bool { return path != "/robots.txt" })
	s := newStack(t, stackOptions{withWorker: true, env: withEnv(crawlEnv, map[string]string{
		"CONCIERGE_WORKER_CONCURRENCY":       "2",
		"CONCIERGE_WORKER_INDEX_CONCURRENCY": "2",
	})})
	// Two workspaces, two crawls each: more crawls than slots of any kind.
	for range 2 {
		tn := s.newTenant(domain.PlanStandard)
		s.createAgent(tn, "docs")
		s.addWebsite(tn, "docs", site.URL+"/", 10)
		s.addWebsite(tn, "docs", site.URL+"/?copy", 10)
	}
	whEventually(t, 30*time.Second, "two crawls blocked on the site", func() bool { return site.waitingNow() == 2 })

	tn := s.newTenant(domain.PlanStandard)
	session := whSession(s, tn, "support")
	whMustAck(s, whPost(s, tn.WebhookSecret, whChat(session, "Is my order on its way?"), nil), tn.ID)
	whEventually(t, 20*time.Second, "the webhook message to be stored while crawls hold the index slots", func() bool {
		return whGetConversation(s, tn, session).MessageCount == 1
	})
	if n := site.waitingNow(); n != 2 {
		t.Fatalf("%d crawls were waiting on the site when the message was stored, want both still blocked", n)
	}
	site.open()
}

// A crawl stops within seconds when its source is deleted, its agent is
// deleted, or a re-index supersedes it: in the middle of a request to a
// site that does not answer, or of a Crawl-delay pause. Its job returns,
// the site sees no further request from it, and nothing of it is stored.
func TestDeletingOrReindexingStopsARunningCrawl(t *testing.T) {
	stalled := newCrawlSite(t, 4, "", func(path string) bool { return path == "/p/1" })
	// Crawl-delay 10: after a page, the crawler pauses ten seconds.
	paced := newCrawlSite(t, 4, "User-agent: *\nCrawl-delay: 10\n", nil)
	s := newStack(t, stackOptions{withWorker: true, env: crawlEnv})
	tests := []struct {
		name   string
		site   *crawlSite
		inside func() bool // the crawl is where the action should find it
		action func(tn tenant, sourceID string)
	}{
		{"source deleted during a request", stalled, func() bool { return stalled.waitingNow() == 1 }, func(tn tenant, id string) {
			s.mustStatus(s.do("DELETE", "/api/v2/agents/docs/sources/"+id, nil, tn.auth()), 204)
		}},
		{"agent deleted during a request", stalled, func() bool { return stalled.waitingNow() == 1 }, func(tn tenant, _ string) {
			s.mustStatus(s.do("DELETE", "/api/v2/agents/docs", nil, tn.auth()), 204)
		}},
		{"source deleted during a Crawl-delay pause", paced, func() bool {
			// The home page answered: ten seconds until the next request.
			perPath, _, _, _ := paced.counts()
			return perPath["/"] == 1
		}, func(tn tenant, id string) {
			s.mustStatus(s.do("DELETE", "/api/v2/agents/docs/sources/"+id, nil, tn.auth()), 204)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := s.newTenant(domain.PlanStandard)
			s.createAgent(tn, "docs")
			_, before, _, cancelledBefore := tt.site.counts()
			id := s.addWebsite(tn, "docs", tt.site.URL+"/", 10)
			whEventually(t, 30*time.Second, "the crawl to reach the slow part", tt.inside)
			_, atAction, _, _ := tt.site.counts()
			tt.action(tn, id)
			s.waitJobGone(id, 0, 30*time.Second)
			_, after, _, _ := tt.site.counts()
			var cancelled int
			if after != atAction {
				t.Fatalf("the site got %d requests after the deletion (%d before it, of %d for this crawl)", after-atAction, atAction-before, after-before)
			}
			if tt.site == stalled {
				whEventually(t, 10*time.Second, "the site to see the waiting request given up", func() bool {
					_, _, _, cancelled = tt.site.counts()
					return cancelled == cancelledBefore+1
				})
			}
			if p, st, ch := s.crawlRows(id); p+st+ch != 0 {
				t.Fatalf("stored for the deleted source: %d crawl progress, %d steps, %d chunks", p, st, ch)
			}
		})
	}

	t.Run("re-indexed during a request", func(t *testing.T) {
		tn := s.newTenant(domain.PlanStandard)
		s.createAgent(tn, "docs")
		id := s.addWebsite(tn, "docs", stalled.URL+"/", 10)
		whEventually(t, 30*time.Second, "the crawl to block", func() bool { return stalled.waitingNow() == 1 })
		perPath, _, _, cancelledBefore := stalled.counts()
		r := s.do("POST", "/api/v2/agents/docs/sources/"+id+"/reindex", nil, tn.auth())
		s.mustStatus(r, 202)
		// The superseded job returns though the site still holds its
		// request, which it gives up; the new generation's crawl blocks at
		// the same page.
		s.waitJobGone(id, 0, 30*time.Second)
		whEventually(t, 30*time.Second, "the new crawl to block in place of the old", func() bool {
			now, _, waiting, cancelled := stalled.counts()
			return now["/p/1"] == perPath["/p/1"]+1 && waiting == 1 && cancelled == cancelledBefore+1
		})
		var generation int
		if err := s.sys.db.Gorm.Raw(`SELECT generation FROM crawl_progress WHERE source_id = ?`, id).Scan(&generation).Error; err != nil || generation != 1 {
			t.Fatalf("crawl progress of generation %d (%v), want only the new generation's", generation, err)
		}
		stalled.open()
		if src := s.waitSource(tn, "docs", id, 30*time.Second); src["status"] != "READY" || src["pageCount"] != 5.0 {
			t.Fatalf("after the re-index: %v", src)
		}
		if p, st, _ := s.crawlRows(id); p+st != 0 {
			t.Fatalf("the finished crawl left %d progress rows and %d steps", p, st)
		}
	})
}

// A crawl has a time budget over all its attempts: when it runs out, the
// pages read are indexed and the source says the crawl stopped early.
func TestCrawlStopsAtItsTimeBudget(t *testing.T) {
	// 200 pages a second apart would take over three minutes.
	site := newCrawlSite(t, 200, "User-agent: *\nCrawl-delay: 1\n", nil)
	s := newStack(t, stackOptions{withWorker: true, env: withEnv(crawlEnv, map[string]string{"CONCIERGE_CRAWL_TIME_BUDGET": "3s"})})
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "docs")
	id := s.addWebsite(tn, "docs", site.URL+"/", 500)
	src := s.waitSource(tn, "docs", id, 30*time.Second)
	pages, _ := src["pageCount"].(float64)
	reason, _ := src["statusReason"].(string)
	if src["status"] != "READY" || pages < 1 || pages > 100 {
		t.Fatalf("source %v, want READY with some of the 201 pages", src)
	}
	if want := fmt.Sprintf("the crawl stopped when its time budget of 3s ran out, after %d pages", int(pages)); !strings.HasPrefix(reason, want) {
		t.Fatalf("statusReason %q, want it to start %q", reason, want)
	}
	if p, st, ch := s.crawlRows(id); p+st != 0 || ch == 0 {
		t.Fatalf("after indexing: %d progress rows, %d steps, %d chunks", p, st, ch)
	}
}

// A worker killed (SIGKILL) in the middle of a crawl leaves its progress in
// PostgreSQL: the next attempt, on another worker, goes on from the page it
// was reading, without requesting the pages read before, and the index ends
// up with every page.
func TestKilledCrawlResumesWhereItWas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills worker processes; asynq gives a killed worker's task back after about a minute")
	}
	site := newCrawlSite(t, 6, "", func(path string) bool { return path == "/p/3" })
	s := newStack(t, stackOptions{env: crawlEnv})
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "docs")
	output := &syncBuffer{}
	first := startWorkerProcess(t, s.env, output)
	id := s.addWebsite(tn, "docs", site.URL+"/", 20)
	whEventually(t, 30*time.Second, "the crawl to reach /p/3", func() bool { return site.waitingNow() == 1 })
	first.kill()
	site.open()

	begin := time.Now()
	second := startWorkerProcess(t, s.env, output)
	src := s.waitSource(tn, "docs", id, 3*time.Minute)
	t.Logf("the killed crawl was resumed and finished %s after the kill", time.Since(begin).Round(time.Second))
	second.stop(t)
	if src["status"] != "READY" || src["pageCount"] != 7.0 {
		t.Fatalf("source %v, want READY with 7 pages\nworker output:\n%s", src, output.String())
	}
	perPath, _, _, _ := site.counts()
	want := map[string]int{"/": 1, "/p/0": 1, "/p/1": 1, "/p/2": 1, "/p/3": 2, "/p/4": 1, "/p/5": 1}
	for path, n := range want {
		if perPath[path] != n {
			t.Errorf("%s requested %d times, want %d (all requests: %v)", path, perPath[path], n, perPath)
		}
	}
	var urls int64
	if err := s.sys.db.Gorm.Raw(`SELECT count(DISTINCT url) FROM chunks WHERE source_id = ?`, id).Scan(&urls).Error; err != nil || urls != 7 {
		t.Fatalf("chunks from %d pages (%v), want 7", urls, err)
	}
}
