package web

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestResolveLink(t *testing.T) {
	base := mustURL(t, "https://docs.example.com/guide/intro?x=1")
	tests := []struct {
		href string
		want string // "" when the link is ignored
	}{
		{"setup", "https://docs.example.com/guide/setup"},
		{"../faq#billing", "https://docs.example.com/faq"},
		{"/a/./b/../c", "https://docs.example.com/a/c"},
		{"?page=2", "https://docs.example.com/guide/intro?page=2"},
		{"//docs.example.com/x", "https://docs.example.com/x"},
		{"HTTPS://DOCS.Example.COM:443/Case", "https://docs.example.com/Case"},
		{"http://docs.example.com:80", "http://docs.example.com/"},
		{"http://docs.example.com:8080/p", "http://docs.example.com:8080/p"},
		{"  /spaced\n/path  ", "https://docs.example.com/spaced/path"},
		{"https://other.example.com/p", "https://other.example.com/p"}, // kept; the crawler filters hosts
		{"#top", ""},
		{"", ""},
		{"mailto:help@example.com", ""},
		{"javascript:void(0)", ""},
		{"tel:+15550100", ""},
		{"data:text/html,hi", ""},
		{"ftp://example.com/f", ""},
		{"https://user:pw@docs.example.com/", ""},
		{"/logo.PNG", ""},
		{"/style.css?v=3", ""},
		{"/app.js", ""},
		{"/manual.pdf", ""},
		{"/release.zip", ""},
		{"/feed.xml", ""},
		{"/page.html", "https://docs.example.com/page.html"},
		{"/docs/v1.2/", "https://docs.example.com/docs/v1.2/"},
		{"/" + strings.Repeat("a", 3000), ""},
	}
	for _, tt := range tests {
		t.Run(tt.href, func(t *testing.T) {
			u, ok := resolveLink(base, tt.href)
			got := ""
			if ok {
				got = u.String()
			}
			if got != tt.want {
				t.Errorf("resolveLink(%q) = %q, want %q", tt.href, got, tt.want)
			}
		})
	}
}

func TestHostKey(t *testing.T) {
	same := [][2]string{
		{"http://example.com/", "https://example.com/x"},
		{"http://example.com:80/", "http://EXAMPLE.com/"},
		{"https://example.com:443/", "http://example.com/"},
	}
	different := [][2]string{
		{"https://example.com/", "https://www.example.com/"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8081/"},
		{"https://example.com/", "https://example.com:8443/"},
	}
	key := func(s string) string {
		u, err := parseTarget(s)
		if err != nil {
			t.Fatal(err)
		}
		return hostKey(u)
	}
	for _, p := range same {
		if key(p[0]) != key(p[1]) {
			t.Errorf("%s and %s should be one site", p[0], p[1])
		}
	}
	for _, p := range different {
		if key(p[0]) == key(p[1]) {
			t.Errorf("%s and %s should be different sites", p[0], p[1])
		}
	}
}

func TestParsePage(t *testing.T) {
	pageURL := mustURL(t, "https://example.com/docs/page")
	tests := []struct {
		name              string
		html              string
		links             []string
		noindex, nofollow bool
	}{
		{
			name:  "links in order, duplicates kept for the crawler to dedupe",
			html:  `<html><body><a href="a">A</a><A HREF="/b">B</A><map><area href="c"></map><a href="a#x">again</a><a>no href</a></body></html>`,
			links: []string{"https://example.com/docs/a", "https://example.com/b", "https://example.com/docs/c", "https://example.com/docs/a"},
		},
		{
			name:  "base href",
			html:  `<html><head><base href="https://example.com/v2/"></head><body><a href="start">S</a></body></html>`,
			links: []string{"https://example.com/v2/start"},
		},
		{
			name:  "relative base href, first one wins",
			html:  `<head><base href="/root/"><base href="/other/"></head><a href="x">x</a>`,
			links: []string{"https://example.com/root/x"},
		},
		{
			name:  "rel=nofollow links left out",
			html:  `<a href="/keep" rel="noopener">k</a><a href="/ugc" rel="ugc NoFollow">u</a>`,
			links: []string{"https://example.com/keep"},
		},
		{
			name:  "links inside scripts and comments are not links",
			html:  `<script>var s = '<a href="/in-script">';</script><!-- <a href="/in-comment"> --><a href="/real">r</a>`,
			links: []string{"https://example.com/real"},
		},
		{
			name:  "entities decoded",
			html:  `<a href="/search?q=a&amp;page=2">s</a>`,
			links: []string{"https://example.com/search?q=a&page=2"},
		},
		{name: "meta noindex", html: `<meta name="robots" content="noindex">`, noindex: true},
		{name: "meta noindex, follow", html: `<META NAME="ROBOTS" CONTENT="NOINDEX, follow">`, noindex: true},
		{name: "meta nofollow", html: `<meta name="robots" content="index,nofollow"><a href="/x">x</a>`, nofollow: true, links: []string{"https://example.com/x"}},
		{name: "meta none", html: `<meta name="robots" content="none">`, noindex: true, nofollow: true},
		{name: "meta for our agent", html: `<meta name="conciergebot" content="noindex">`, noindex: true},
		{name: "meta for another agent ignored", html: `<meta name="googlebot" content="noindex, nofollow">`},
		{name: "malformed HTML", html: `<a href="/one"<a href='/two'>two</a><p><a href=/three>`, links: []string{"https://example.com/one", "https://example.com/three"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parsePage([]byte(tt.html), pageURL, "ConciergeBot")
			var got []string
			for _, l := range m.links {
				got = append(got, l.String())
			}
			if !slices.Equal(got, tt.links) {
				t.Errorf("links = %q, want %q", got, tt.links)
			}
			if m.noindex != tt.noindex || m.nofollow != tt.nofollow {
				t.Errorf("noindex, nofollow = %v, %v; want %v, %v", m.noindex, m.nofollow, tt.noindex, tt.nofollow)
			}
		})
	}
}

func TestHeaderRobots(t *testing.T) {
	tests := []struct {
		values            []string
		noindex, nofollow bool
	}{
		{nil, false, false},
		{[]string{"noindex"}, true, false},
		{[]string{"noindex, nofollow"}, true, true},
		{[]string{"none"}, true, true},
		{[]string{"all"}, false, false},
		{[]string{"googlebot: noindex"}, false, false},
		{[]string{"ConciergeBot: nofollow"}, false, true},
		{[]string{"unavailable_after: 25 Jun 2030 15:00:00 PST", "noindex"}, true, false},
		{[]string{"max-snippet: 20, noindex"}, true, false},
	}
	for _, tt := range tests {
		ni, nf := headerRobots(tt.values, "ConciergeBot")
		if ni != tt.noindex || nf != tt.nofollow {
			t.Errorf("headerRobots(%q) = %v, %v; want %v, %v", tt.values, ni, nf, tt.noindex, tt.nofollow)
		}
	}
}

func TestDecodeSitemap(t *testing.T) {
	tests := []struct {
		name, xml, root string
		urls, maps      int
		wantErr         bool
	}{
		{
			name: "urlset with namespace",
			xml: `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
				<url><loc> https://example.com/a </loc><lastmod>2026-01-01</lastmod></url><url><loc>https://example.com/b</loc></url></urlset>`,
			root: "urlset", urls: 2,
		},
		{
			name: "index",
			xml:  `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>https://example.com/s1.xml</loc></sitemap></sitemapindex>`,
			root: "sitemapindex", maps: 1,
		},
		{
			name: "latin-1 declaration and a stray ampersand",
			xml:  "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset><url><loc>https://example.com/caf\xe9?a=1&b=2</loc></url></urlset>",
			root: "urlset", urls: 1,
		},
		{name: "rss is parsed but is no sitemap", xml: `<rss><channel><item><link>https://example.com/</link></item></channel></rss>`, root: "rss"},
		{name: "not XML", xml: `{"urls": []}`, wantErr: true},
		{name: "empty", xml: ``, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sm, err := decodeSitemap(strings.NewReader(tt.xml))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("decodeSitemap accepted %q", tt.xml)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeSitemap: %v", err)
			}
			if sm.XMLName.Local != tt.root || len(sm.URLs) != tt.urls || len(sm.Sitemaps) != tt.maps {
				t.Errorf("got root %q, %d urls, %d sitemaps", sm.XMLName.Local, len(sm.URLs), len(sm.Sitemaps))
			}
		})
	}
}

func TestCapReader(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		limit   int64
		wantErr error
	}{
		{"under", "hello", 10, nil},
		{"exact", "hello", 5, nil},
		{"over", "hello!", 5, errTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &capReader{r: strings.NewReader(tt.body), left: tt.limit}
			got, err := io.ReadAll(c)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && string(got) != tt.body {
				t.Errorf("read %q", got)
			}
		})
	}
	// A gzip bomb is cut off by the cap on decompressed bytes.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(bytes.Repeat([]byte("a"), 1<<20))
	_ = zw.Close()
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(&capReader{r: zr, left: 1000}); !errors.Is(err, errTooLarge) {
		t.Errorf("gzip bomb: err = %v, want errTooLarge", err)
	}
}
