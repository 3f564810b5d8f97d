package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Shape of BenchmarkWebhookPickupUnderCrawls.
const (
	pickupCrawls     = 20 // website sources crawled at once in a crawl round
	pickupWorkspaces = 5  // that many workspaces hold them
	pickupSessions   = 10 // conversations the webhook messages go to
	pickupRate       = 50 // webhook messages a second
	// pickupPageDelay is how long the slow site takes to answer a page, on
	// average (from half to one and a half of it, at random, so the crawls
	// do not all read a page in the same instant); a crawl reads a chain of
	// ten of them, so it outlasts a round.
	pickupPageDelay = 2 * time.Second
)

// BenchmarkWebhookPickupUnderCrawls measures how long an acknowledged
// inbound webhook message waits for the worker: from the 200 answer of
// POST /api/webhooks/inbound to the stored USER message arriving on its
// conversation's live stream (GET /api/v2/conversations/{id}/events), the
// worker running in the same process as `concierge dev` runs it. Messages
// go out at 50 a second to ten conversations of one workspace.
//
// Rounds alternate: the baseline, with no crawl running, and a round while
// 20 website sources of five other workspaces are crawled from a slow site
// (every page takes 1 to 3 s to answer; a crawl reads a chain of ten pages,
// so every crawl runs the whole round). Crawls are started by a re-index at
// the start of the round and end when the site stops answering slowly at
// its end. The worker gets 20 index slots and four per workspace, so all
// 20 crawls run at once. Reported: the medians over the rounds of each
// round's p50 and p99.
func BenchmarkWebhookPickupUnderCrawls(b *testing.B) {
	site := newPickupSite(b)
	s := newStack(b, stackOptions{withWorker: true, env: map[string]string{
		"CONCIERGE_LOG_LEVEL":                               "error",
		"CONCIERGE_RATE_LIMIT_WEBHOOK_PER_MINUTE":           "100000000",
		"CONCIERGE_RATE_LIMIT_API_PER_MINUTE":               "100000000",
		"CONCIERGE_CRAWL_ALLOW_PRIVATE_ADDRESSES_FOR_TESTS": "true",
		"CONCIERGE_WORKER_INDEX_CONCURRENCY":                strconv.Itoa(pickupCrawls),
		"CONCIERGE_INDEX_SLOTS_PER_WORKSPACE":               strconv.Itoa(pickupCrawls / pickupWorkspaces),
	}})

	type crawled struct {
		tn tenant
		id string
	}
	var sources []crawled
	for w := range pickupWorkspaces {
		tn := s.newTenant(domain.PlanStandard)
		s.createAgent(tn, "docs")
		for i := range pickupCrawls / pickupWorkspaces {
			r := s.do("POST", "/api/v2/agents/docs/sources", map[string]any{
				"type": "website", "url": fmt.Sprintf("%s/?crawl=%d-%d", site.URL, w, i), "maxPages": 50, "maxDepth": 10,
			}, tn.auth())
			if r.Status != 201 {
				b.Fatalf("creating a website source: %d %s", r.Status, r.Body)
			}
			sources = append(sources, crawled{tn, r.JSON(b)["id"].(string)})
		}
	}
	// The first indexing runs with the site answering at once.
	waitPickupSources := func() {
		deadline := time.Now().Add(2 * time.Minute)
		for _, src := range sources {
			for {
				r := s.do("GET", "/api/v2/agents/docs/sources/"+src.id, nil, src.tn.auth())
				if st := r.JSON(b)["status"]; st == "READY" || st == "FAILED" {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("website sources still indexing after 2 minutes")
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	waitPickupSources()

	receiver := s.newTenant(domain.PlanStandard)
	s.createAgent(receiver, "support")
	sessions := make([]string, pickupSessions)
	for i := range sessions {
		sessions[i] = s.startSession(receiver, "support")
	}
	pickups := openPickupStreams(b, s, receiver, sessions)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	var sent int
	send := func(d time.Duration) {
		interval := time.Second / pickupRate
		start := time.Now()
		var wg sync.WaitGroup
		for i := 0; ; i++ {
			next := start.Add(time.Duration(i) * interval)
			if next.Sub(start) >= d {
				break
			}
			time.Sleep(time.Until(next))
			sent++
			n := sent
			wg.Go(func() {
				began := time.Now()
				body, _ := json.Marshal(map[string]string{"event": "chat.message", "sessionId": sessions[n%len(sessions)], "message": "pickup " + strconv.Itoa(n)})
				req, _ := http.NewRequest("POST", s.base+"/api/webhooks/inbound", strings.NewReader(string(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-webhook-secret", receiver.WebhookSecret)
				resp, err := client.Do(req)
				if err != nil {
					b.Errorf("webhook: %v", err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("webhook answered %d", resp.StatusCode)
					return
				}
				pickups.acked(n, began, time.Now())
			})
		}
		wg.Wait()
	}
	// round sends for one round's duration and waits (up to three minutes)
	// for every message it sent to be picked up.
	round := func(name string, during func()) pickupRound {
		first := sent + 1
		send(benchDuration())
		if during != nil {
			during()
		}
		return pickups.round(b, name, first, sent, 3*time.Minute)
	}

	// Warm-up: connections, the worker's first polls.
	send(benchWarmup)
	var base, crawl []pickupRound
	for range max(benchRounds(), 5) {
		base = append(base, round("no crawls", nil))

		site.slow(true)
		for _, src := range sources {
			r := s.do("POST", "/api/v2/agents/docs/sources/"+src.id+"/reindex", nil, src.tn.auth())
			if r.Status != 202 {
				b.Fatalf("re-index: %d %s", r.Status, r.Body)
			}
		}
		// Let every crawl reach the site.
		time.Sleep(pickupPageDelay + time.Second)
		var running int
		r := round(fmt.Sprintf("%d crawls", pickupCrawls), func() {
			running = site.crawlsActive()
			site.slow(false)
			waitPickupSources()
		})
		r.crawlsAtEnd = running
		crawl = append(crawl, r)
		// One line per pair: benchmark logs beyond ten lines are cut.
		b.Logf("%s | %s", base[len(base)-1], r)
	}
	medBase, medCrawl := medianPickup(base), medianPickup(crawl)
	b.Logf("median of %d rounds: no crawls p50 %.2f ms, p99 %.2f ms | %d crawls p50 %.2f ms, p99 %.2f ms (target p99 < 100 ms)",
		len(base), ms(medBase.p50), ms(medBase.p99), pickupCrawls, ms(medCrawl.p50), ms(medCrawl.p99))
	b.ReportMetric(ms(medBase.p50), "base-p50-ms")
	b.ReportMetric(ms(medBase.p99), "base-p99-ms")
	b.ReportMetric(ms(medCrawl.p50), "crawls-p50-ms")
	b.ReportMetric(ms(medCrawl.p99), "crawls-p99-ms")
	b.ReportMetric(float64(medCrawl.p99)/float64(max(medBase.p99, time.Microsecond)), "p99-ratio")
}

// pickupSite is a website whose pages, while slow, each take about
// pickupPageDelay to answer: the home page links to /p/0, each page to the
// next. When it stops being slow, waiting requests answer at once, pages
// after the home page with 404, so every crawl ends within one request.
type pickupSite struct {
	*httptest.Server
	mu       sync.Mutex
	fast     chan struct{} // closed while not slow
	lastSeen map[string]time.Time
}

func newPickupSite(b *testing.B) *pickupSite {
	b.Helper()
	p := &pickupSite{fast: make(chan struct{}), lastSeen: map[string]time.Time{}}
	close(p.fast)
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	b.Cleanup(func() {
		p.slow(false)
		p.Close()
	})
	return p
}

func (p *pickupSite) slow(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.fast:
		if on {
			p.fast = make(chan struct{})
		}
	default:
		if !on {
			close(p.fast)
		}
	}
}

// crawlsActive counts the crawls that asked for a page within the longest
// a page takes: those running.
func (p *pickupSite) crawlsActive() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, at := range p.lastSeen {
		if time.Since(at) < 3*pickupPageDelay/2 {
			n++
		}
	}
	return n
}

func (p *pickupSite) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	crawl := r.URL.Query().Get("crawl")
	p.mu.Lock()
	fast := p.fast
	p.lastSeen[crawl] = time.Now()
	p.mu.Unlock()
	slow := true
	select {
	case <-fast:
		slow = false
	case <-time.After(pickupPageDelay/2 + rand.N(pickupPageDelay)):
	case <-r.Context().Done():
		return
	}
	next := "/p/0"
	if strings.HasPrefix(r.URL.Path, "/p/") {
		if !slow {
			http.NotFound(w, r)
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		next = fmt.Sprintf("/p/%d", n+1)
	} else if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<html><head><title>Manual %s</title></head><body><main><h1>Manual page %s</h1>
<p>This page of the manual explains the part numbered %s of the telescope: how to clean it, adjust it and replace it.</p>
<a href="%s?crawl=%s">next</a></main></body></html>`, r.URL.Path, r.URL.Path, r.URL.Path, next, crawl)
}

// pickupStreams reads the live streams of the receiving conversations and
// pairs each message's arrival with its webhook's acknowledgement.
type pickupStreams struct {
	mu    sync.Mutex
	sent  map[int]time.Time
	acks  map[int]time.Time
	seen  map[int]time.Time
	count int
}

func (p *pickupStreams) acked(n int, sent, at time.Time) {
	p.mu.Lock()
	p.sent[n], p.acks[n] = sent, at
	p.mu.Unlock()
}

func openPickupStreams(b *testing.B, s *stack, tn tenant, sessions []string) *pickupStreams {
	b.Helper()
	p := &pickupStreams{sent: map[int]time.Time{}, acks: map[int]time.Time{}, seen: map[int]time.Time{}}
	followSessions(b, s, tn, sessions, func(body io.Reader) {
		lines := bufio.NewScanner(body)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		for lines.Scan() {
			data, ok := strings.CutPrefix(lines.Text(), "data: ")
			if !ok {
				continue
			}
			at := time.Now()
			var ev struct {
				Type    string `json:"type"`
				Message struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal([]byte(data), &ev) != nil || ev.Type != "message" || ev.Message.Role != "USER" {
				continue
			}
			n, err := strconv.Atoi(strings.TrimPrefix(ev.Message.Content, "pickup "))
			if err != nil {
				continue
			}
			p.mu.Lock()
			if _, dup := p.seen[n]; !dup {
				p.seen[n] = at
				p.count++
			}
			p.mu.Unlock()
		}
	})
	return p
}

// pickupRound is one round's pickup latencies, with the acknowledgements'
// p99 (the API's share, for comparison) and when in the round the slowest
// pickup was sent (0 at the start, 1 at the end).
type pickupRound struct {
	name          string
	n             int
	p50, p99, max time.Duration
	ackP99        time.Duration
	slowestAt     float64
	crawlsAtEnd   int
}

func (r pickupRound) String() string {
	crawls := ""
	if r.crawlsAtEnd > 0 {
		crawls = fmt.Sprintf("; %d crawls still reading the site at its end", r.crawlsAtEnd)
	}
	return fmt.Sprintf("%s: pickup p50 %.2f ms, p99 %.2f ms, max %.2f ms (sent at %.0f %% of the round); ack p99 %.2f ms; %d messages%s",
		r.name, ms(r.p50), ms(r.p99), ms(r.max), 100*r.slowestAt, ms(r.ackP99), r.n, crawls)
}

// round waits until messages first..last were all acknowledged and picked
// up, and summarises their latencies. A message that arrived on its stream
// before its sender read the 200 counts as zero.
func (p *pickupStreams) round(b *testing.B, name string, first, last int, timeout time.Duration) pickupRound {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		missing := 0
		for n := first; n <= last; n++ {
			_, a := p.acks[n]
			_, s := p.seen[n]
			if !a || !s {
				missing++
			}
		}
		p.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("round %s: %d of %d messages not picked up after %s", name, missing, last-first+1, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	lats := make([]time.Duration, 0, last-first+1)
	acks := make([]time.Duration, 0, last-first+1)
	slowest := first
	for n := first; n <= last; n++ {
		lats = append(lats, max(0, p.seen[n].Sub(p.acks[n])))
		acks = append(acks, p.acks[n].Sub(p.sent[n]))
		if p.seen[n].Sub(p.acks[n]) > p.seen[slowest].Sub(p.acks[slowest]) {
			slowest = n
		}
	}
	slices.Sort(lats)
	slices.Sort(acks)
	return pickupRound{name: name, n: len(lats), p50: lats[len(lats)/2], p99: lats[len(lats)*99/100], max: lats[len(lats)-1],
		ackP99: acks[len(acks)*99/100], slowestAt: float64(slowest-first) / float64(max(last-first, 1))}
}

// medianPickup is the median of the rounds' p50s and of their p99s.
func medianPickup(rounds []pickupRound) pickupRound {
	p50s := make([]time.Duration, len(rounds))
	p99s := make([]time.Duration, len(rounds))
	for i, r := range rounds {
		p50s[i], p99s[i] = r.p50, r.p99
	}
	slices.Sort(p50s)
	slices.Sort(p99s)
	return pickupRound{p50: p50s[len(p50s)/2], p99: p99s[len(p99s)/2]}
}
