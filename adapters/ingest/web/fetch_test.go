package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

func TestNewOptions(t *testing.T) {
	f, err := New(Options{Extract: testExtract})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	o := f.opts
	if o.UserAgent != DefaultUserAgent || o.Timeout != DefaultTimeout || o.MaxBodyBytes != DefaultMaxBodyBytes ||
		o.MaxRedirects != DefaultMaxRedirects || o.MaxCrawlDelay != DefaultMaxCrawlDelay || f.delay != DefaultPoliteDelay ||
		o.AllowPrivateAddresses {
		t.Errorf("defaults not applied: %+v, delay %s", o, f.delay)
	}
	if f.agent != "ConciergeBot" {
		t.Errorf("agent = %q, want ConciergeBot", f.agent)
	}
	if f.guard.AllowsPrivate() {
		t.Error("the guard is relaxed by default")
	}
	if f, err := New(Options{Extract: testExtract, DefaultCrawlDelay: -1}); err != nil || f.delay != 0 {
		t.Errorf("negative DefaultCrawlDelay: delay %v, err %v; want no delay", f.delay, err)
	}
	if f, err := New(Options{Extract: testExtract, UserAgent: "AcmeBot/2 (+https://acme.test)"}); err != nil || f.agent != "AcmeBot" {
		t.Errorf("custom UA: agent %q, err %v", f.agent, err)
	}

	bad := []struct {
		name string
		o    Options
	}{
		{"no extractor", Options{}},
		{"negative timeout", Options{Extract: testExtract, Timeout: -time.Second}},
		{"huge timeout", Options{Extract: testExtract, Timeout: time.Hour}},
		{"negative body cap", Options{Extract: testExtract, MaxBodyBytes: -1}},
		{"huge body cap", Options{Extract: testExtract, MaxBodyBytes: 1 << 30}},
		{"negative redirects", Options{Extract: testExtract, MaxRedirects: -1}},
		{"too many redirects", Options{Extract: testExtract, MaxRedirects: 50}},
		{"negative max crawl delay", Options{Extract: testExtract, MaxCrawlDelay: -time.Second}},
		{"default delay above cap", Options{Extract: testExtract, MaxCrawlDelay: time.Second, DefaultCrawlDelay: 2 * time.Second}},
		{"multi-line user agent", Options{Extract: testExtract, UserAgent: "Bot/1\r\nX-Evil: 1"}},
		{"user agent without token", Options{Extract: testExtract, UserAgent: " /1.0"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.o); err == nil {
				t.Error("New accepted invalid options")
			}
		})
	}
}

func TestFetch(t *testing.T) {
	big := strings.Repeat("x", 2048)
	s := newSite(t, map[string]http.HandlerFunc{
		"/page":        page("Hello", ""),
		"/xhtml":       raw(200, "application/xhtml+xml", "<html><head><title>X</title></head><body>x</body></html>"),
		"/untyped":     raw(200, "", "<!DOCTYPE html><html><head><title>Sniffed</title></head><body>hi</body></html>"),
		"/untyped-bin": raw(200, "", "\x89PNG\r\n\x1a\n\x00\x00binary"),
		"/pdf":         raw(200, "application/pdf", "%PDF-1.7"),
		"/png":         raw(200, "image/png", "\x89PNG"),
		"/json":        raw(200, "application/json", `{"a":1}`),
		"/empty":       raw(200, "text/html", "<html><title>E</title>EMPTY-PAGE</html>"),
		"/big":         raw(200, "text/html", "<html>"+big+"</html>"),
		"/big-stream": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			for range 4 {
				_, _ = w.Write([]byte(big[:700]))
				w.(http.Flusher).Flush() // chunked: no Content-Length to refuse on
			}
		},
		"/exact":     raw(200, "text/html", "<html><title>Exact</title>"+strings.Repeat("y", 1024-len("<html><title>Exact</title>"))),
		"/r1":        redirect(http.StatusMovedPermanently, "/r2"),
		"/r2":        redirect(http.StatusFound, "r3"),
		"/r3":        redirect(http.StatusSeeOther, "/page#frag"),
		"/loop":      redirect(http.StatusFound, "/loop"),
		"/no-loc":    raw(http.StatusFound, "text/html", ""),
		"/gone":      raw(http.StatusGone, "text/html", "gone"),
		"/forbidden": raw(http.StatusForbidden, "text/html", "SECRET-BODY-403"),
		"/boom":      raw(http.StatusInternalServerError, "text/html", "SECRET-BODY-500 stack trace"),
		"/busy":      raw(http.StatusServiceUnavailable, "text/html", "busy"),
		"/throttled": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		},
	})
	f := newFetcher(t, func(o *Options) { o.MaxBodyBytes = 1024; o.MaxRedirects = 3 })

	ok := []struct {
		path, wantURL, wantTitle string
	}{
		{"/page", "/page", "Hello"},
		{"/page#section", "/page", "Hello"},
		{"/xhtml", "/xhtml", "X"},
		{"/untyped", "/untyped", "Sniffed"},
		{"/exact", "/exact", "Exact"},
		{"/r1", "/page", "Hello"}, // three hops, relative Locations, fragment dropped
	}
	for _, tt := range ok {
		t.Run("ok "+tt.path, func(t *testing.T) {
			doc, err := f.Fetch(context.Background(), s.URL+tt.path)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if doc.URL != s.URL+tt.wantURL || doc.Title != tt.wantTitle {
				t.Errorf("doc = {URL %q, Title %q}, want {%q, %q}", doc.URL, doc.Title, s.URL+tt.wantURL, tt.wantTitle)
			}
		})
	}

	failing := []struct {
		path string
		kind error
		want string
	}{
		{"/missing", domain.ErrInvalidInput, "url: the server answered 404 Not Found"},
		{"/gone", domain.ErrInvalidInput, "url: the server answered 410 Gone"},
		{"/forbidden", domain.ErrInvalidInput, "url: the server answered 403 Forbidden"},
		{"/no-loc", domain.ErrInvalidInput, "url: the server answered 302 Found"},
		{"/boom", domain.ErrUnavailable, "the server answered 500 Internal Server Error"},
		{"/busy", domain.ErrUnavailable, "the server answered 503 Service Unavailable"},
		{"/throttled", domain.ErrUnavailable, "the server answered 429 Too Many Requests"},
		{"/pdf", domain.ErrInvalidInput, "url: the page is application/pdf, not HTML"},
		{"/png", domain.ErrInvalidInput, "url: the page is image/png, not HTML"},
		{"/json", domain.ErrInvalidInput, "url: the page is application/json, not HTML"},
		{"/untyped-bin", domain.ErrInvalidInput, "url: the page is not HTML"},
		{"/big", domain.ErrInvalidInput, "url: page is larger than 1 KiB"},
		{"/big-stream", domain.ErrInvalidInput, "url: page is larger than 1 KiB"},
		{"/loop", domain.ErrInvalidInput, "url: stopped after 3 redirects"},
		{"/empty", domain.ErrInvalidInput, "file: holds no text"}, // the extractor's own error
	}
	for _, tt := range failing {
		t.Run("fails "+tt.path, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), s.URL+tt.path)
			wantKind(t, err, tt.kind)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "SECRET-BODY") {
				t.Errorf("err quotes the response body: %q", err)
			}
		})
	}
	if n := s.count("/loop"); n != 4 {
		t.Errorf("/loop requested %d times, want 4 (the first and 3 redirects)", n)
	}
}

func TestFetchRejectsMalformedURLs(t *testing.T) {
	f := newFetcher(t, nil)
	tests := []struct{ url, want string }{
		{"", "url: is required"},
		{"   ", "url: is required"},
		{"not a url", "url: must be an absolute http or https URL"},
		{"/relative/path", "url: must be an absolute http or https URL"},
		{"ftp://example.com/file", "url: must use http or https"},
		{"file:///etc/passwd", "url: must use http or https"},
		{"javascript:alert(1)", "url: must use http or https"},
		{"http://user:pass@example.com/", "url: must not contain a user name or password"},
		{"http://user@example.com/", "url: must not contain a user name or password"},
		{"http:///path-only", "url: has no host"},
		{"http:opaque", "url: must be an absolute http or https URL"},
		{"http://example.com:99999999/", "url: has an invalid port"},
		{"http://example.com:0/", "url: has an invalid port"},
		{"http://example.com/" + strings.Repeat("a", 3000), "url: is longer than 2048 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), tt.url)
			wantKind(t, err, domain.ErrInvalidInput)
			if err.Error() != tt.want {
				t.Errorf("err = %q, want %q", err, tt.want)
			}
		})
	}
}

func TestFetchNetworkFailuresAreUnavailable(t *testing.T) {
	release := make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/slow-headers": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
		"/slow-body": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><title>partial"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
	})
	t.Cleanup(func() { close(release) })
	closed := newSite(t, nil)
	closedURL := closed.URL
	closed.Close()

	f := newFetcher(t, func(o *Options) { o.Timeout = 150 * time.Millisecond })
	tests := []struct{ name, url, want string }{
		{"no headers in time", s.URL + "/slow-headers", "unavailable"},
		{"body stalls", s.URL + "/slow-body", "unavailable"},
		{"connection refused", closedURL + "/", "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := f.Fetch(context.Background(), tt.url)
			wantKind(t, err, domain.ErrUnavailable)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q", err)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("took %s, want about the 150ms timeout", el)
			}
		})
	}
}

func TestFetchSendsUserAgent(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": page("UA", "")})
	for _, ua := range []string{"", "AcmeBot/2.0 (+https://acme.test/bot)"} {
		f := newFetcher(t, func(o *Options) { o.UserAgent = ua })
		if _, err := f.Fetch(context.Background(), s.URL+"/"); err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		want := ua
		if want == "" {
			want = DefaultUserAgent
		}
		hits := s.requests()
		if got := hits[len(hits)-1].ua; got != want {
			t.Errorf("User-Agent = %q, want %q", got, want)
		}
	}
}

func TestFetchHonoursCancellation(t *testing.T) {
	started := make(chan struct{}, 1)
	s := newSite(t, map[string]http.HandlerFunc{"/hang": func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	}})
	f := newFetcher(t, func(o *Options) { o.Timeout = 10 * time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	begin := time.Now()
	_, err := f.Fetch(ctx, s.URL+"/hang")
	if !errors.Is(err, context.Canceled) || errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("err = %v, want context.Canceled only", err)
	}
	if el := time.Since(begin); el > 2*time.Second {
		t.Errorf("took %s after cancel", el)
	}
}

func TestFormatSizeAndRetryAfter(t *testing.T) {
	for n, want := range map[int64]string{5 << 20: "5 MiB", 1024: "1 KiB", 1536: "1536 bytes", 100: "100 bytes", 3 << 19: "1536 KiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		"-3":                            0,
		"soon":                          0,
		"Sun, 01 Nov 2026 12:00:30 GMT": 30 * time.Second,
		"Sun, 01 Nov 2026 11:00:00 GMT": 0,
	} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := retryAfter(h, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}
