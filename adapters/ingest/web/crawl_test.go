package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// crawlAll crawls and returns the visited documents' URLs, relative to
// base, in visit order.
func crawlAll(t *testing.T, f *Fetcher, ctx context.Context, start string, limits domain.CrawlLimits, base string) ([]string, error) {
	t.Helper()
	var got []string
	err := f.Crawl(ctx, start, limits, nil, pagesOnly(func(d domain.Document) error {
		if d.Title == "" || d.Text == "" {
			t.Errorf("visited %s with an empty document", d.URL)
		}
		got = append(got, strings.TrimPrefix(d.URL, base))
		return nil
	}))
	return got, err
}

// pagesOnly adapts a function of the pages to Crawl's record, which also
// sees the requests that gave none.
func pagesOnly(visit func(domain.Document) error) func(ports.CrawlStep, *domain.Document) error {
	return func(_ ports.CrawlStep, d *domain.Document) error {
		if d == nil {
			return nil
		}
		return visit(*d)
	}
}

// docsSite is a small site with cycles, a redirect to a visited page,
// robots.txt rules, noindex and nofollow pages, failing pages, files that
// are not pages, and links off the site.
func docsSite(t *testing.T, external string) *site {
	return newSite(t, map[string]http.HandlerFunc{
		"/robots.txt": robots("User-agent: *\nDisallow: /private/\n\nUser-agent: OtherBot\nDisallow: /\n"),
		"/": page("Home", "",
			"/a", "b", "/c#section", "/a#top", "/private/secret", "/old", "/noindex", "/xnoindex", "/nofollow",
			"/broken", "/missing", "/data",
			external+"/ext", "https://example.com/", "mailto:help@example.com", "javascript:void(0)", "tel:+15550100",
			"/logo.png", "/style.css", "/manual.pdf",
		),
		"/a":            page("A", "", "/", "/b", "/a/deep"),
		"/b":            page("B", `<link rel="stylesheet" href="/style.css">`, "/a", "/c", "/b?"),
		"/c":            page("C", "", "/b", "#top", "http://"+strings.TrimPrefix(external, "http://")+"/c"),
		"/a/deep":       page("Deep", "", "/a/deeper"),
		"/a/deeper":     page("Deeper", "", "/a/deepest"),
		"/a/deepest":    page("Deepest", ""),
		"/old":          redirect(http.StatusMovedPermanently, "/a"),
		"/noindex":      page("Hidden", `<meta name="robots" content="noindex">`, "/from-noindex"),
		"/from-noindex": page("Found via noindex", ""),
		"/xnoindex": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Robots-Tag", "noindex")
			page("Header hidden", "")(w, r)
		},
		"/nofollow":       page("No follow", `<meta name="robots" content="nofollow">`, "/only-nofollow"),
		"/only-nofollow":  page("Never", ""),
		"/broken":         raw(http.StatusInternalServerError, "text/html", "oops"),
		"/data":           raw(200, "application/json", `{}`),
		"/private/secret": page("Secret", ""),
		"/logo.png":       raw(200, "image/png", "png"),
		"/style.css":      raw(200, "text/css", "body{}"),
		"/manual.pdf":     raw(200, "application/pdf", "%PDF"),
	})
}

func TestCrawlSite(t *testing.T) {
	external := newSite(t, map[string]http.HandlerFunc{"/ext": page("External", ""), "/c": page("External C", "")})
	s := docsSite(t, external.URL)
	f := newFetcher(t, nil)

	got, err := crawlAll(t, f, context.Background(), s.URL+"/", domain.CrawlLimits{MaxPages: 100, MaxDepth: 10}, s.URL)
	if err != nil {
		t.Fatalf("Crawl: %v", err)
	}
	// Breadth-first, in link order; /old redirects to the visited /a, the
	// noindex pages are read (their links followed) but not visited.
	want := []string{"/", "/a", "/b", "/c", "/nofollow", "/a/deep", "/from-noindex", "/a/deeper", "/a/deepest"}
	if !slices.Equal(got, want) {
		t.Fatalf("visited %q\nwant    %q", got, want)
	}

	never := []string{"/private/secret", "/only-nofollow", "/logo.png", "/style.css", "/manual.pdf"}
	for _, p := range never {
		if n := s.count(p); n != 0 {
			t.Errorf("%s requested %d times, want 0", p, n)
		}
	}
	once := []string{"/robots.txt", "/", "/a", "/b", "/old", "/noindex", "/xnoindex", "/broken", "/missing", "/data"}
	for _, p := range once {
		if n := s.count(p); n != 1 {
			t.Errorf("%s requested %d times, want 1", p, n)
		}
	}
	if n := len(external.requests()); n != 0 {
		t.Errorf("the external site received %d requests, want 0", n)
	}
	for _, h := range s.requests() {
		if h.ua != DefaultUserAgent {
			t.Errorf("%s sent User-Agent %q", h.path, h.ua)
		}
	}
	if s.requests()[0].path != "/robots.txt" {
		t.Errorf("first request was %s, want /robots.txt", s.requests()[0].path)
	}
}

func TestCrawlLimits(t *testing.T) {
	external := newSite(t, nil)
	tests := []struct {
		name   string
		limits domain.CrawlLimits
		want   []string
		unseen []string // never requested
	}{
		{"depth 1", domain.CrawlLimits{MaxPages: 100, MaxDepth: 1}, []string{"/", "/a", "/b", "/c", "/nofollow"}, []string{"/a/deep", "/from-noindex"}},
		{"depth 2", domain.CrawlLimits{MaxPages: 100, MaxDepth: 2}, []string{"/", "/a", "/b", "/c", "/nofollow", "/a/deep", "/from-noindex"}, []string{"/a/deeper"}},
		{"3 pages", domain.CrawlLimits{MaxPages: 3, MaxDepth: 10}, []string{"/", "/a", "/b"}, []string{"/c", "/a/deep"}},
		{"1 page", domain.CrawlLimits{MaxPages: 1, MaxDepth: 10}, []string{"/"}, []string{"/a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := docsSite(t, external.URL)
			got, err := crawlAll(t, newFetcher(t, nil), context.Background(), s.URL+"/", tt.limits, s.URL)
			if err != nil {
				t.Fatalf("Crawl: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("visited %q, want %q", got, tt.want)
			}
			for _, p := range tt.unseen {
				if n := s.count(p); n != 0 {
					t.Errorf("%s requested %d times, want 0", p, n)
				}
			}
		})
	}
}

func TestCrawlRejectsBadLimits(t *testing.T) {
	f := newFetcher(t, nil)
	for _, l := range []domain.CrawlLimits{
		{MaxPages: 0, MaxDepth: 1},
		{MaxPages: -1, MaxDepth: 1},
		{MaxPages: 1, MaxDepth: 0},
		{MaxPages: MaxPagesLimit + 1, MaxDepth: 1},
		{MaxPages: 1, MaxDepth: MaxDepthLimit + 1},
		{},
	} {
		err := f.Crawl(context.Background(), "http://127.0.0.1:1/", l, nil, pagesOnly(func(domain.Document) error { return nil }))
		wantKind(t, err, domain.ErrInvalidInput)
		var ve *domain.ValidationError
		if errors.As(err, &ve); len(ve.Fields) == 0 {
			t.Errorf("%+v: error names no field: %v", l, err)
		}
	}
	if err := f.Crawl(context.Background(), "http://127.0.0.1:1/", domain.CrawlLimits{MaxPages: 1, MaxDepth: 1}, nil, nil); err == nil {
		t.Error("Crawl accepted a nil visit")
	}
}

func gzipped(t *testing.T, s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func urlset(base string, paths ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, p := range paths {
		if !strings.Contains(p, "://") {
			p = base + p
		}
		fmt.Fprintf(&b, "<url><loc>%s</loc></url>", p)
	}
	return b.String() + "</urlset>"
}

func sitemapIndex(base string, paths ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, p := range paths {
		if !strings.Contains(p, "://") {
			p = base + p
		}
		fmt.Fprintf(&b, "<sitemap><loc>%s</loc></sitemap>", p)
	}
	return b.String() + "</sitemapindex>"
}

// sitemapSite serves a sitemap index three files deep (a fourth level is
// ignored), a gzipped sitemap, and pages linking further.
func sitemapSite(t *testing.T, external string) *site {
	var s *site
	xml := func(body func() string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { raw(200, "application/xml", body())(w, r) }
	}
	s = newSite(t, map[string]http.HandlerFunc{
		"/sitemap.xml": xml(func() string {
			return sitemapIndex(s.URL, "/sitemap-pages.xml", "/sitemap-more.xml.gz", "/sitemap-nested.xml", external+"/sitemap.xml", "/sitemap-missing.xml")
		}),
		"/sitemap": xml(func() string { return urlset(s.URL, "/p2", "/p1") }),
		"/sitemap-pages.xml": xml(func() string {
			return urlset(s.URL, "/p1", "/p2", external+"/p9", "/p1", "/image.png", "/private/p")
		}),
		"/sitemap-more.xml.gz": func(w http.ResponseWriter, r *http.Request) {
			raw(200, "application/gzip", gzipped(t, urlset(s.URL, "/p3")))(w, r)
		},
		"/sitemap-nested.xml":        xml(func() string { return sitemapIndex(s.URL, "/sitemap-deep.xml", "/sitemap-deeper-index.xml") }),
		"/sitemap-deep.xml":          xml(func() string { return urlset(s.URL, "/p4") }),
		"/sitemap-deeper-index.xml":  xml(func() string { return sitemapIndex(s.URL, "/sitemap-too-deep.xml") }),
		"/sitemap-too-deep.xml":      xml(func() string { return urlset(s.URL, "/p5") }),
		"/robots.txt":                robots("User-agent: *\nDisallow: /private/\n"),
		"/p1":                        page("P1", "", "/p1-child"),
		"/p2":                        page("P2", "", "/p1"),
		"/p3":                        page("P3", ""),
		"/p4":                        page("P4", ""),
		"/p5":                        page("P5", ""),
		"/p1-child":                  page("P1 child", ""),
		"/private/p":                 page("Private", ""),
		"/image.png":                 raw(200, "image/png", "png"),
		"/sitemap-broken.xml":        raw(200, "application/xml", "<urlset><url><loc>"),
		"/sitemap-html.xml":          page("Not a sitemap", "", "/p1"),
		"/feed.xml":                  raw(200, "application/rss+xml", `<rss><channel></channel></rss>`),
		"/sitemap-untyped-local.xml": func(w http.ResponseWriter, r *http.Request) { raw(200, "", urlset(s.URL, "/p3"))(w, r) },
	})
	return s
}

func TestCrawlFromSitemap(t *testing.T) {
	external := newSite(t, nil)
	tests := []struct {
		name   string
		start  string
		limits domain.CrawlLimits
		want   []string
	}{
		{"index, depth 1", "/sitemap.xml", domain.CrawlLimits{MaxPages: 100, MaxDepth: 1}, []string{"/p1", "/p2", "/p3", "/p4"}},
		{"index, depth 2 follows links", "/sitemap.xml", domain.CrawlLimits{MaxPages: 100, MaxDepth: 2}, []string{"/p1", "/p2", "/p3", "/p4", "/p1-child"}},
		{"index, page cap", "/sitemap.xml", domain.CrawlLimits{MaxPages: 2, MaxDepth: 2}, []string{"/p1", "/p2"}},
		{"urlset without .xml, known by its type", "/sitemap", domain.CrawlLimits{MaxPages: 100, MaxDepth: 1}, []string{"/p2", "/p1"}},
		{"untyped .xml sitemap", "/sitemap-untyped-local.xml", domain.CrawlLimits{MaxPages: 100, MaxDepth: 1}, []string{"/p3"}},
		{".xml answered with HTML is a page", "/sitemap-html.xml", domain.CrawlLimits{MaxPages: 100, MaxDepth: 1}, []string{"/sitemap-html.xml", "/p1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sitemapSite(t, external.URL)
			got, err := crawlAll(t, newFetcher(t, nil), context.Background(), s.URL+tt.start, tt.limits, s.URL)
			if err != nil {
				t.Fatalf("Crawl: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("visited %q, want %q", got, tt.want)
			}
			for _, p := range []string{"/sitemap-too-deep.xml", "/p5", "/private/p", "/image.png"} {
				if n := s.count(p); n != 0 {
					t.Errorf("%s requested %d times, want 0", p, n)
				}
			}
			if s.count("/p1") > 1 {
				t.Errorf("/p1 requested %d times", s.count("/p1"))
			}
		})
	}
	if n := len(external.requests()); n != 0 {
		t.Errorf("the external site received %d requests, want 0", n)
	}
}

func TestCrawlStartFailures(t *testing.T) {
	s := sitemapSite(t, "http://127.0.0.1:1")
	f := newFetcher(t, nil)
	tests := []struct {
		name, start string
		kind        error
		want        string
	}{
		{"missing start", "/nope", domain.ErrInvalidInput, "url: the server answered 404 Not Found"},
		{"broken sitemap", "/sitemap-broken.xml", domain.ErrInvalidInput, "url: the sitemap is not valid XML"},
		{"feed is no sitemap", "/feed.xml", domain.ErrInvalidInput, "url: is not a sitemap"},
		{"non-page start", "/image.png", domain.ErrInvalidInput, "url: the page is image/png, not HTML"},
		{"start disallowed by robots.txt", "/private/p", domain.ErrInvalidInput, "robots.txt of " + strings.TrimPrefix(s.URL, "http://") + " disallows /private/p"},
		{"malformed start", "::nope", domain.ErrInvalidInput, "url: must be an absolute http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := tt.start
			if strings.HasPrefix(start, "/") {
				start = s.URL + start
			}
			err := f.Crawl(context.Background(), start, domain.CrawlLimits{MaxPages: 5, MaxDepth: 2}, nil, pagesOnly(func(d domain.Document) error {
				t.Errorf("visited %s", d.URL)
				return nil
			}))
			wantKind(t, err, tt.kind)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if n := s.count("/private/p"); n != 0 {
		t.Errorf("/private/p requested %d times", n)
	}
}

func TestCrawlRobotsAnswers(t *testing.T) {
	tests := []struct {
		name    string
		robots  http.HandlerFunc
		kind    error  // nil when the crawl proceeds
		want    string // substring of the error
		visited []string
	}{
		{"404 allows all", nil, nil, "", []string{"/", "/a"}},
		{"403 allows all", raw(http.StatusForbidden, "text/plain", ""), nil, "", []string{"/", "/a"}},
		{"empty allows all", robots(""), nil, "", []string{"/", "/a"}},
		{"HTML soft 404 allows all", page("Not found", ""), nil, "", []string{"/", "/a"}},
		{"our group wins over *", robots("User-agent: *\nDisallow: /\n\nUser-agent: ConciergeBot\nDisallow: /a\n"), nil, "", []string{"/"}},
		{"* applies when we have no group", robots("User-agent: Googlebot\nDisallow: /\n\nUser-agent: *\nDisallow: /a\n"), nil, "", []string{"/"}},
		{"redirected robots.txt is followed", redirect(http.StatusMovedPermanently, "/robots-real.txt"), nil, "", []string{"/"}},
		{"500 forbids crawling", raw(http.StatusInternalServerError, "text/plain", "SECRET-BODY"), domain.ErrUnavailable, "the server answered 500 Internal Server Error, so the site is not crawled", nil},
		{"503 forbids crawling", raw(http.StatusServiceUnavailable, "text/plain", ""), domain.ErrUnavailable, "so the site is not crawled", nil},
		{"429 forbids crawling", raw(http.StatusTooManyRequests, "text/plain", ""), domain.ErrUnavailable, "429 Too Many Requests", nil},
		{"unparseable forbids crawling", robots("Disallow: /a\nUser-agent: *\nCrawl-delay: soon\n"), domain.ErrInvalidInput, "could not be parsed", nil},
		{"disallow all", robots("User-agent: *\nDisallow: /\n"), domain.ErrInvalidInput, "disallows /", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes := map[string]http.HandlerFunc{
				"/":                page("Home", "", "/a"),
				"/a":               page("A", ""),
				"/robots-real.txt": robots("User-agent: *\nDisallow: /a\n"),
			}
			if tt.robots != nil {
				routes["/robots.txt"] = tt.robots
			}
			s := newSite(t, routes)
			got, err := crawlAll(t, newFetcher(t, nil), context.Background(), s.URL+"/", domain.CrawlLimits{MaxPages: 10, MaxDepth: 3}, s.URL)
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("Crawl: %v", err)
				}
				if !slices.Equal(got, tt.visited) {
					t.Errorf("visited %q, want %q", got, tt.visited)
				}
				return
			}
			wantKind(t, err, tt.kind)
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
			if s.count("/") != 0 {
				t.Error("the start page was requested although robots.txt forbids crawling")
			}
		})
	}
}

func TestCrawlStartUnreachable(t *testing.T) {
	s := newSite(t, nil)
	u := s.URL
	s.Close()
	err := newFetcher(t, nil).Crawl(context.Background(), u+"/", domain.CrawlLimits{MaxPages: 1, MaxDepth: 1}, nil, pagesOnly(func(domain.Document) error { return nil }))
	wantKind(t, err, domain.ErrUnavailable)
}

func TestCrawlStartServerError(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": raw(http.StatusBadGateway, "text/html", "")})
	err := newFetcher(t, nil).Crawl(context.Background(), s.URL+"/", domain.CrawlLimits{MaxPages: 1, MaxDepth: 1}, nil, pagesOnly(func(domain.Document) error { return nil }))
	wantKind(t, err, domain.ErrUnavailable)
}

// gaps are the pauses between consecutive requests a site received.
func gaps(s *site) []time.Duration {
	hits := s.requests()
	var out []time.Duration
	for i := 1; i < len(hits); i++ {
		out = append(out, hits[i].at.Sub(hits[i-1].at))
	}
	return out
}

func TestCrawlPacing(t *testing.T) {
	tests := []struct {
		name    string
		robots  string
		opts    func(*Options)
		minGap  time.Duration
		maxTime time.Duration
	}{
		{"robots Crawl-delay for our agent", "User-agent: *\nDisallow: /\n\nUser-agent: ConciergeBot\nAllow: /\nCrawl-delay: 0.05\n", nil, 50 * time.Millisecond, 5 * time.Second},
		{"Crawl-delay capped by MaxCrawlDelay", "User-agent: *\nCrawl-delay: 30\n", func(o *Options) { o.MaxCrawlDelay = 60 * time.Millisecond }, 60 * time.Millisecond, 5 * time.Second},
		{"DefaultCrawlDelay without Crawl-delay", "User-agent: *\nDisallow: /private\n", func(o *Options) { o.DefaultCrawlDelay = 40 * time.Millisecond }, 40 * time.Millisecond, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSite(t, map[string]http.HandlerFunc{
				"/robots.txt": robots(tt.robots),
				"/":           page("Home", "", "/a", "/b", "/c"),
				"/a":          page("A", ""),
				"/b":          page("B", ""),
				"/c":          page("C", ""),
			})
			begin := time.Now()
			got, err := crawlAll(t, newFetcher(t, tt.opts), context.Background(), s.URL+"/", domain.CrawlLimits{MaxPages: 10, MaxDepth: 2}, s.URL)
			if err != nil {
				t.Fatalf("Crawl: %v", err)
			}
			if want := []string{"/", "/a", "/b", "/c"}; !slices.Equal(got, want) {
				t.Fatalf("visited %q, want %q", got, want)
			}
			g := gaps(s)
			if len(g) != 4 {
				t.Fatalf("%d requests, want 5 (robots.txt and 4 pages)", len(g)+1)
			}
			for i, d := range g {
				if d < tt.minGap {
					t.Errorf("gap %d = %s, want >= %s", i, d, tt.minGap)
				}
			}
			if el := time.Since(begin); el > tt.maxTime {
				t.Errorf("crawl took %s", el)
			}
			t.Logf("gaps: %v", g)
		})
	}
}

func TestCrawlRetriesAfter429(t *testing.T) {
	var calls atomic.Int32
	s := newSite(t, map[string]http.HandlerFunc{
		"/": page("Home", "", "/busy", "/after"),
		"/busy": func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			page("Busy", "")(w, r)
		},
		"/after": page("After", ""),
	})
	f := newFetcher(t, func(o *Options) { o.MaxCrawlDelay = 80 * time.Millisecond })
	got, err := crawlAll(t, f, context.Background(), s.URL+"/", domain.CrawlLimits{MaxPages: 10, MaxDepth: 2}, s.URL)
	if err != nil {
		t.Fatalf("Crawl: %v", err)
	}
	if want := []string{"/", "/busy", "/after"}; !slices.Equal(got, want) {
		t.Fatalf("visited %q, want %q", got, want)
	}
	hits := s.requests()
	var busy []time.Time
	var after time.Time
	for _, h := range hits {
		switch h.path {
		case "/busy":
			busy = append(busy, h.at)
		case "/after":
			after = h.at
		}
	}
	if len(busy) != 2 {
		t.Fatalf("/busy requested %d times, want 2", len(busy))
	}
	// Retry-After (1 s) capped at MaxCrawlDelay, then kept as the delay.
	if d := busy[1].Sub(busy[0]); d < 80*time.Millisecond {
		t.Errorf("retry after %s, want >= 80ms", d)
	}
	if d := after.Sub(busy[1]); d < 80*time.Millisecond {
		t.Errorf("next request after %s, want >= 80ms", d)
	}
}

func TestCrawlAdoptsStartRedirectHost(t *testing.T) {
	// example.com redirecting to www.example.com, played by two ports.
	var target *site
	origin := newSite(t, map[string]http.HandlerFunc{
		"/": func(w http.ResponseWriter, r *http.Request) {
			redirect(http.StatusMovedPermanently, target.URL+"/")(w, r)
		},
		"/other": page("Origin page", ""),
	})
	target = newSite(t, map[string]http.HandlerFunc{
		"/":   page("Target home", "", "/t1"),
		"/t1": page("T1", "", "/t2"),
		"/t2": page("T2", "", origin.URL+"/other"), // another site now
	})
	got, err := crawlAll(t, newFetcher(t, nil), context.Background(), origin.URL+"/", domain.CrawlLimits{MaxPages: 10, MaxDepth: 5}, target.URL)
	if err != nil {
		t.Fatalf("Crawl: %v", err)
	}
	if want := []string{"/", "/t1", "/t2"}; !slices.Equal(got, want) {
		t.Errorf("visited %q, want %q", got, want)
	}
	if n := origin.count("/other"); n != 0 {
		t.Errorf("origin /other requested %d times", n)
	}
	// Each origin's robots.txt is read once, before its first page.
	if origin.count("/robots.txt") != 1 || target.count("/robots.txt") != 1 {
		t.Errorf("robots.txt requests: origin %d, target %d", origin.count("/robots.txt"), target.count("/robots.txt"))
	}
}

func TestCrawlSkipsOffSiteRedirects(t *testing.T) {
	other := newSite(t, map[string]http.HandlerFunc{"/landing": page("Elsewhere", "")})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":     page("Home", "", "/away", "/a"),
		"/away": redirect(http.StatusFound, other.URL+"/landing"),
		"/a":    page("A", ""),
	})
	got, err := crawlAll(t, newFetcher(t, nil), context.Background(), s.URL+"/", domain.CrawlLimits{MaxPages: 10, MaxDepth: 2}, s.URL)
	if err != nil {
		t.Fatalf("Crawl: %v", err)
	}
	if want := []string{"/", "/a"}; !slices.Equal(got, want) {
		t.Errorf("visited %q, want %q", got, want)
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the other site received %d requests", n)
	}
}

func TestCrawlVisitErrorStops(t *testing.T) {
	s := docsSite(t, "http://127.0.0.1:1")
	errStop := errors.New("store is full")
	var n int
	err := newFetcher(t, nil).Crawl(context.Background(), s.URL+"/", domain.CrawlLimits{MaxPages: 100, MaxDepth: 5}, nil, pagesOnly(func(domain.Document) error {
		n++
		if n == 2 {
			return errStop
		}
		return nil
	}))
	if !errors.Is(err, errStop) {
		t.Fatalf("err = %v, want the visit error", err)
	}
	if n != 2 {
		t.Errorf("visit called %d times after failing, want 2 in all", n)
	}
	if s.count("/b") != 0 {
		t.Error("crawl went on after visit failed")
	}
}

func TestCrawlStopsOnCancel(t *testing.T) {
	t.Run("cancelled by visit", func(t *testing.T) {
		s := docsSite(t, "http://127.0.0.1:1")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var n int
		err := newFetcher(t, nil).Crawl(ctx, s.URL+"/", domain.CrawlLimits{MaxPages: 100, MaxDepth: 5}, nil, pagesOnly(func(domain.Document) error {
			n++
			cancel()
			return nil
		}))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if n != 1 || s.count("/a") != 0 {
			t.Errorf("visited %d pages, /a requested %d times after cancel", n, s.count("/a"))
		}
	})
	t.Run("cancelled during a crawl delay", func(t *testing.T) {
		s := newSite(t, map[string]http.HandlerFunc{
			"/robots.txt": robots("User-agent: *\nCrawl-delay: 5\n"),
			"/":           page("Home", "", "/a"),
			"/a":          page("A", ""),
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(100*time.Millisecond, cancel)
		begin := time.Now()
		_, err := crawlAll(t, newFetcher(t, nil), ctx, s.URL+"/", domain.CrawlLimits{MaxPages: 10, MaxDepth: 2}, s.URL)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if el := time.Since(begin); el > 2*time.Second {
			t.Errorf("Crawl returned %s after start, want soon after the 100ms cancel", el)
		}
		if s.count("/") != 0 {
			t.Error("the start page was requested before the 5 s delay passed")
		}
	})
}

func TestCrawlSkipsPagesWithoutText(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  raw(200, "text/html", `<html><title>Shell</title>EMPTY-PAGE<a href="/a">a</a></html>`),
		"/a": page("A", ""),
	})
	got, err := crawlAll(t, newFetcher(t, nil), context.Background(), s.URL+"/", domain.CrawlLimits{MaxPages: 10, MaxDepth: 2}, s.URL)
	if err != nil {
		t.Fatalf("Crawl: %v", err)
	}
	if want := []string{"/a"}; !slices.Equal(got, want) {
		t.Errorf("visited %q, want %q", got, want)
	}
}
