package safehttp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

func TestClientDialsThroughTheGuardWithoutProxyOrRedirects(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	t.Cleanup(srv.Close)

	if _, err := NewGuard(false).Client(ClientOptions{Timeout: time.Second}).Get(srv.URL); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("GET of a loopback server through the guard: %v, want a refusal", err)
	}
	c := NewGuard(true).Client(ClientOptions{Timeout: time.Second})
	if tr, ok := c.Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Fatalf("transport %T has a proxy function", c.Transport)
	}
	resp, err := c.Get(srv.URL) // the proxy.invalid would fail it
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d, want the redirect itself", resp.StatusCode)
	}
}

func TestCheckURLUsesTheEffectivePort(t *testing.T) {
	g := NewGuard(false)
	g.TreatAsPublicForTests(netip.MustParseAddrPort("127.0.0.1:443"), netip.MustParseAddrPort("127.0.0.1:8080"))
	for raw, allowed := range map[string]bool{
		"https://127.0.0.1/hooks":     true,
		"http://127.0.0.1/hooks":      false, // port 80
		"http://127.0.0.1:8080/hooks": true,
		"https://10.0.0.1/hooks":      false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.CheckURL(u); (err == nil) != allowed {
			t.Errorf("CheckURL(%s) = %v, want allowed %v", raw, err, allowed)
		}
	}
}

// TestCheckURLRefusesNumericHostForms: resolvers read these as IPv4
// addresses (inet_aton), so each reaches loopback or a private network
// although it is no IP literal; real names with digits still pass.
func TestCheckURLRefusesNumericHostForms(t *testing.T) {
	g := NewGuard(false)
	for raw, allowed := range map[string]bool{
		"https://2130706433/hooks":    false, // 127.0.0.1 as one number
		"https://0x7f000001/hooks":    false, // in hex
		"https://0X7F000001/hooks":    false, // in upper-case hex
		"https://127.1/hooks":         false, // two parts
		"https://10.1/hooks":          false,
		"https://0177.0.0.1/hooks":    false, // octal first part
		"https://127.0.0.0x1/hooks":   false,
		"https://0x/hooks":            false,
		"https://8.8.8.8/hooks":       true, // canonical and public
		"https://hooks.example.com/":  true,
		"https://123.example.com/":    true, // digits, but not the last label
		"https://api2.example.io/in":  true,
		"https://example.com./hooks":  true, // a trailing dot is still a name
		"https://0xcafe.example.com/": true,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.CheckURL(u); (err == nil) != allowed {
			t.Errorf("CheckURL(%s) = %v, want allowed %v", raw, err, allowed)
		}
	}
}
