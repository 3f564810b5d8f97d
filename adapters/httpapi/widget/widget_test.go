package widget

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
)

func TestContentType(t *testing.T) {
	tests := map[string]string{
		"widget.js":                       "text/javascript; charset=utf-8",
		"vendor/dompurify/purify.min.js":  "text/javascript; charset=utf-8",
		"widget.css":                      "text/css; charset=utf-8",
		"vendor/marked/LICENSE":           "text/plain; charset=utf-8",
		"vendor/README.md":                "text/plain; charset=utf-8",
		"icon.svg":                        "image/svg+xml",
		"strings.json":                    "application/json; charset=utf-8",
		"font.woff2":                      "font/woff2",
		"blob.unknown-extension-for-test": "application/octet-stream",
	}
	for name, want := range tests {
		if got := contentType(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestFrameAncestors(t *testing.T) {
	tests := []struct {
		origins []string
		want    string
	}{
		{nil, "*"},
		{[]string{"https://shop.example.com", "http://localhost:3000"}, "'self' https://shop.example.com http://localhost:3000"},
		// Stored origins are valid; one that is not is dropped, never
		// written into the header, and does not widen the policy.
		{[]string{"https://a.example; script-src *"}, "'self'"},
	}
	for _, tt := range tests {
		if got := frameAncestors(tt.origins); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.origins, got, tt.want)
		}
	}
}

func TestETagMatches(t *testing.T) {
	const etag = `"abc"`
	for header, want := range map[string]bool{`"abc"`: true, `W/"abc"`: true, `"x", "abc"`: true, `*`: true, `"x"`: false, `abc`: false} {
		if got := etagMatches(header, etag); got != want {
			t.Errorf("%s: %v, want %v", header, got, want)
		}
	}
}

// TestAssets serves the real embedded assets: every file but the
// templates, each with its Content-Type, nosniff, an ETag and the caching
// its link asks for.
func TestAssets(t *testing.T) {
	h, err := NewHandlers(nil, nil, wire.NewDecoder())
	if err != nil {
		t.Fatalf("the embedded front end does not load: %v", err)
	}
	for _, name := range []string{"widget.js", "widget.css"} {
		if h.links[name] == "" {
			t.Fatalf("no link for %s: %v", name, h.links)
		}
	}
	for name := range h.links {
		if strings.HasSuffix(name, ".tmpl") {
			t.Fatalf("template %s is served as an asset", name)
		}
	}
	app := fiber.New()
	app.Get(AssetsPrefix+"*", h.Asset)
	get := func(target string, header map[string]string) (int, map[string]string, string) {
		req := httptest.NewRequest("GET", target, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		got := map[string]string{}
		for _, k := range []string{"Content-Type", "Cache-Control", "ETag", "X-Content-Type-Options"} {
			got[k] = resp.Header.Get(k)
		}
		return resp.StatusCode, got, string(body)
	}
	for name, link := range h.links {
		status, hdr, body := get(link, nil)
		if status != 200 || body != string(h.assets[name].body) || hdr["Content-Type"] != contentType(name) ||
			hdr["Cache-Control"] != cacheAsset || hdr["X-Content-Type-Options"] != "nosniff" || hdr["ETag"] == "" {
			t.Fatalf("%s: %d %v", link, status, hdr)
		}
		if status, _, body := get(link, map[string]string{"If-None-Match": hdr["ETag"]}); status != 304 || body != "" {
			t.Fatalf("%s revalidated: %d, %d bytes", link, status, len(body))
		}
		if _, hdr, _ := get(AssetsPrefix+name+"?v=000000000000", nil); hdr["Cache-Control"] != cacheLatest {
			t.Fatalf("%s with a stale version: Cache-Control %q", name, hdr["Cache-Control"])
		}
	}
	for _, target := range []string{AssetsPrefix + "missing.js", AssetsPrefix + pageTemplate, AssetsPrefix + notFoundTemplate} {
		if status, hdr, _ := get(target, nil); status != 404 || hdr["X-Content-Type-Options"] != "nosniff" {
			t.Fatalf("%s: %d %v", target, status, hdr)
		}
	}
}
