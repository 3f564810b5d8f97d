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
