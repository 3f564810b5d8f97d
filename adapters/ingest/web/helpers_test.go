package web

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// titleRE finds a page's <title> for testExtract.
var titleRE = regexp.MustCompile(`(?is)<title>(.*?)</title>`)

// testExtract stands in for the HTML extractor of adapters/ingest: the
// title is the <title>, the text the whole body; a body containing
// "EMPTY-PAGE" has no text.
func testExtract(body []byte, pageURL string) (domain.Document, error) {
	if strings.Contains(string(body), "EMPTY-PAGE") {
		return domain.Document{}, domain.InvalidField("file", "holds no text")
	}
	doc := domain.Document{URL: "set-by-extract-should-be-overwritten", Text: string(body)}
	if m := titleRE.FindSubmatch(body); m != nil {
		doc.Title = string(m[1])
	}
	return doc, nil
}

// newFetcher returns a Fetcher for local test servers: private addresses
// allowed, no politeness delay, short timeout; change applies overrides.
func newFetcher(t *testing.T, change func(*Options)) *Fetcher {
	t.Helper()
	o := Options{
		Extract:               testExtract,
		AllowPrivateAddresses: true,
		DefaultCrawlDelay:     -1,
		Timeout:               2 * time.Second,
	}
	if change != nil {
		change(&o)
	}
	f, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

// hit is one request a test server received.
type hit struct {
	path string
	at   time.Time
	ua   string
}

// site is a test web server on 127.0.0.1 that records its requests.
// Unknown paths answer 404.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	hits []hit
}

func newSite(t *testing.T, routes map[string]http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, hit{path: r.URL.RequestURI(), at: time.Now(), ua: r.UserAgent()})
		s.mu.Unlock()
		if h, ok := routes[r.URL.Path]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) requests() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.hits...)
}

// count is how many requests path received.
func (s *site) count(path string) int {
	n := 0
	for _, h := range s.requests() {
		if h.path == path {
			n++
		}
	}
	return n
}

// page serves an HTML page titled title, with head holding extra markup
// (meta tags) and links to hrefs.
func page(title, head string, hrefs ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title>%s</head><body><h1>%s</h1>\n", html.EscapeString(title), head, html.EscapeString(title))
		for _, h := range hrefs {
			fmt.Fprintf(&b, "<p><a href=\"%s\">link</a></p>\n", html.EscapeString(h))
		}
		b.WriteString("</body></html>")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(b.String()))
	}
}

// raw serves body with a content type and status.
func raw(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if contentType == "" {
			w.Header()["Content-Type"] = nil // no sniffing either
		} else {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func redirect(status int, to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", to)
		w.WriteHeader(status)
	}
}

func robots(body string) http.HandlerFunc { return raw(200, "text/plain", body) }

// wantKind checks err's kind: ErrInvalidInput as a *domain.ValidationError,
// or ErrUnavailable; never both.
func wantKind(t *testing.T, err, kind error) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %v", kind)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("err = %v, want kind %v", err, kind)
	}
	if kind == domain.ErrInvalidInput {
		var ve *domain.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("err = %v (%T), want a *domain.ValidationError", err, err)
		}
		if errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("err = %v is also ErrUnavailable", err)
		}
	}
	if kind == domain.ErrUnavailable && errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("err = %v is also ErrInvalidInput", err)
	}
}
