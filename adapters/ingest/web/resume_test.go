package web

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// crawlRecord is what one Crawl recorded: its steps and, in order, the
// URLs of the pages it gave.
type crawlRecord struct {
	steps []ports.CrawlStep
	pages []string
}

func recordCrawl(t *testing.T, f *Fetcher, start string, limits domain.CrawlLimits, resume []ports.CrawlStep) (crawlRecord, error) {
	t.Helper()
	var rec crawlRecord
	err := f.Crawl(context.Background(), start, limits, resume, func(st ports.CrawlStep, d *domain.Document) error {
		if st.Visited != (d != nil) {
			t.Errorf("step %s: Visited %v with document %v", st.URL, st.Visited, d != nil)
		}
		rec.steps = append(rec.steps, st)
		if d != nil {
			rec.pages = append(rec.pages, d.URL)
		}
		return nil
	})
	return rec, err
}

// A crawl resumed from the steps of one that stopped after any step goes
// on exactly as the uninterrupted crawl did: the same further steps and
// pages, in the same order, within the same limits, and none of the pages
// of the steps it resumed from is requested again.
func TestCrawlResumesWhereItStopped(t *testing.T) {
	docs := docsSite(t, "http://127.0.0.1:1")
	maps := sitemapSite(t, "http://127.0.0.1:1")
	// A redirect to a page that a later page links to: the page must stay
	// known as read across the resume.
	moved := newSite(t, map[string]http.HandlerFunc{
		"/":      page("Home", "", "/old", "/x"),
		"/old":   redirect(http.StatusMovedPermanently, "/moved"),
		"/x":     page("X", "", "/moved", "/y"),
		"/moved": page("Moved", ""),
		"/y":     page("Y", ""),
	})
	tests := []struct {
		name   string
		site   *site
		start  string
		limits domain.CrawlLimits
	}{
		{"site from its home page", docs, "/", domain.CrawlLimits{MaxPages: 100, MaxDepth: 10}},
		{"page and depth limits", docs, "/", domain.CrawlLimits{MaxPages: 4, MaxDepth: 2}},
		{"site from a sitemap", maps, "/sitemap.xml", domain.CrawlLimits{MaxPages: 100, MaxDepth: 3}},
		{"redirect to a page linked later", moved, "/", domain.CrawlLimits{MaxPages: 100, MaxDepth: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFetcher(t, nil)
			full, err := recordCrawl(t, f, tt.site.URL+tt.start, tt.limits, nil)
			if err != nil {
				t.Fatalf("uninterrupted crawl: %v", err)
			}
			if len(full.steps) < 4 || !full.steps[0].Start {
				t.Fatalf("the uninterrupted crawl recorded %d steps: %+v", len(full.steps), full.steps)
			}
			for k := 1; k <= len(full.steps); k++ {
				done := full.steps[:k]
				before := len(tt.site.requests())
				resumed, err := recordCrawl(t, f, tt.site.URL+tt.start, tt.limits, done)
				if err != nil {
					t.Fatalf("resumed after %d steps: %v", k, err)
				}
				if got, want := describeSteps(tt.site.URL, append(slices.Clone(done), resumed.steps...)), describeSteps(tt.site.URL, full.steps); !slices.Equal(got, want) {
					t.Fatalf("resumed after %d steps, the crawl took\n%q\nwant\n%q", k, got, want)
				}
				visitedBefore := 0
				for _, st := range done {
					if st.Visited {
						visitedBefore++
					}
				}
				if want := full.pages[visitedBefore:]; !slices.Equal(resumed.pages, want) {
					t.Fatalf("resumed after %d steps, pages %q, want %q", k, resumed.pages, want)
				}
				requested := map[string]bool{}
				for _, st := range done {
					requested[strings.TrimPrefix(st.URL, tt.site.URL)] = true
					requested[strings.TrimPrefix(st.FinalURL, tt.site.URL)] = true
				}
				for _, h := range tt.site.requests()[before:] {
					if requested[h.path] {
						t.Errorf("resumed after %d steps, %s was requested again", k, h.path)
					}
				}
			}
		})
	}
}

func describeSteps(base string, steps []ports.CrawlStep) []string {
	out := make([]string, len(steps))
	for i, st := range steps {
		links := make([]string, len(st.Links))
		for j, l := range st.Links {
			links[j] = strings.TrimPrefix(l, base)
		}
		out[i] = strings.Join([]string{
			strings.TrimPrefix(st.URL, base), "->", strings.TrimPrefix(st.FinalURL, base),
			"depth", string(rune('0' + st.Depth)), "start", boolWord(st.Start), "visited", boolWord(st.Visited),
			"links", strings.Join(links, ","),
		}, " ")
	}
	return out
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// A crawl that recorded everything there was to crawl resumes to nothing:
// no page is requested, not even the start.
func TestCrawlResumedAtItsEndRequestsNothing(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page("Home", "", "/a"),
		"/a": page("A", ""),
	})
	f := newFetcher(t, nil)
	full, err := recordCrawl(t, f, s.URL+"/", domain.CrawlLimits{MaxPages: 10, MaxDepth: 2}, nil)
	if err != nil || len(full.pages) != 2 {
		t.Fatalf("crawl: %v, pages %q", err, full.pages)
	}
	before := len(s.requests())
	again, err := recordCrawl(t, f, s.URL+"/", domain.CrawlLimits{MaxPages: 10, MaxDepth: 2}, full.steps)
	if err != nil || len(again.steps) != 0 {
		t.Fatalf("resumed crawl: %v, steps %+v", err, again.steps)
	}
	if got := s.requests()[before:]; len(got) != 0 {
		t.Fatalf("the finished crawl, resumed, made requests: %+v", got)
	}
}

// Steps that cannot come from a crawl of this start are refused, before
// any request.
func TestCrawlRefusesStepsOfAnotherCrawl(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": page("Home", "", "/a"), "/a": page("A", "")})
	start := s.URL + "/"
	tests := []struct {
		name  string
		steps []ports.CrawlStep
		want  string
	}{
		{"first step is not the start", []ports.CrawlStep{{URL: s.URL + "/a", Depth: 1}}, "not at the start"},
		{"another start", []ports.CrawlStep{{URL: s.URL + "/other", Start: true}}, "not at the start"},
		{"two starts", []ports.CrawlStep{{URL: start, Start: true, Links: []string{s.URL + "/a"}}, {URL: start, Start: true}}, "second start"},
		{"bad link", []ports.CrawlStep{{URL: start, Start: true, Links: []string{"ftp://x/"}}}, "bad link"},
		{"bad final address", []ports.CrawlStep{{URL: start, FinalURL: "::", Start: true}}, "bad start address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(s.requests())
			err := newFetcher(t, nil).Crawl(context.Background(), start, domain.CrawlLimits{MaxPages: 5, MaxDepth: 2}, tt.steps,
				func(ports.CrawlStep, *domain.Document) error { return errors.New("recorded a step") })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to say %q", err, tt.want)
			}
			if n := len(s.requests()) - before; n != 0 {
				t.Fatalf("%d requests made", n)
			}
		})
	}
}

// FuzzReplay feeds replay crawl logs as storage might return them, damaged
// or not: one step a line, "url|final|depth|start|visited|link,link". It
// must never panic, and a log it accepts must leave a state the crawl can
// go on from: the site known, counts within the steps given, and every
// queued page under the site and not already answered unless it was.
func FuzzReplay(f *testing.F) {
	f.Add("https://help.example.com/", "https://help.example.com/|https://help.example.com/home|0|1|1|https://help.example.com/a,https://help.example.com/b\nhttps://help.example.com/a||1|0|0|\nhttps://help.example.com/b|https://help.example.com/a|1|0|1|https://help.example.com/c")
	f.Add("https://help.example.com/sitemap.xml", "https://help.example.com/sitemap.xml||0|1|0|https://help.example.com/p1,https://help.example.com/p1,https://other.example.com/x")
	f.Add("https://help.example.com/", "https://help.example.com/||0|0|1|")
	f.Add("https://help.example.com/", "https://help.example.com/|::|0|1|0|")
	f.Add("https://help.example.com/", "https://help.example.com/||-5|1|1|ftp://x/,https://help.example.com/%zz")
	f.Add("http://127.0.0.1:8080/", "http://127.0.0.1:8080/||0|1|1|http://127.0.0.1:8080/a\nhttp://127.0.0.1:8080/||0|1|1|")
	f.Fuzz(func(t *testing.T, start, log string) {
		u, err := parseTarget(start)
		if err != nil {
			return
		}
		var steps []ports.CrawlStep
		for line := range strings.Lines(log) {
			fields := strings.Split(strings.TrimRight(line, "\n"), "|")
			for len(fields) < 6 {
				fields = append(fields, "")
			}
			depth := 0
			for _, r := range fields[2] {
				if r >= '0' && r <= '9' && depth < 1000 {
					depth = depth*10 + int(r-'0')
				}
			}
			var links []string
			if fields[5] != "" {
				links = strings.Split(fields[5], ",")
			}
			steps = append(steps, ports.CrawlStep{URL: fields[0], FinalURL: fields[1], Depth: depth,
				Start: fields[3] == "1", Visited: fields[4] == "1", Links: links})
		}
		if len(steps) == 0 {
			return
		}
		c := &crawl{f: &Fetcher{}, limits: domain.CrawlLimits{MaxPages: 10, MaxDepth: 3},
			robots: map[string]*robotsRules{}, hosts: map[string]*hostPace{}, seen: map[string]bool{}, done: map[string]bool{}}
		if err := c.replay(u, steps); err != nil {
			return
		}
		if c.site == "" || c.visited > len(steps) || c.requested >= len(steps) || len(c.queued) != 0 {
			t.Fatalf("after replay: site %q, visited %d, requested %d of %d steps, %d queued links pending", c.site, c.visited, c.requested, len(steps), len(c.queued))
		}
		for _, it := range c.queue {
			if !c.seen[it.key] || it.u.String() != it.key {
				t.Fatalf("queued %q (%q) unseen or not in normal form", it.key, it.u)
			}
		}
	})
}
