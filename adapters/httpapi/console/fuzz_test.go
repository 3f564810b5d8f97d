package console

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzSafeNext: whatever next is, the redirect target is the console's home
// or next itself, and next is kept only when a browser resolving it stays
// on this site, under /console.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/console/w/ws_1/agents", "//evil.com", "/\\evil.com", "https://evil.com", "%2F%2Fevil.com",
		"/console/%2e%2e/x", "/console?next=//x", "/console/\t/x", "/console/%5c%5cevil"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://console.example/console/sign-in")
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if got == Prefix {
			return
		}
		if got != next {
			t.Fatalf("safeNext(%q) = %q: neither home nor next", next, got)
		}
		if strings.ContainsAny(got, "\\\r\n\t\x00") {
			t.Fatalf("kept %q with a backslash or control character", got)
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("kept %q, which does not parse: %v", got, err)
		}
		r := base.ResolveReference(u)
		if r.Host != "console.example" || r.Scheme != "https" || (r.Path != Prefix && !strings.HasPrefix(r.Path, Prefix+"/")) {
			t.Fatalf("kept %q, which leads to %s", got, r)
		}
	})
}
