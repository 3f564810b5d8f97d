package web

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// guardedFetcher has the address guard ON, as in production.
func guardedFetcher(t *testing.T) *Fetcher {
	return newFetcher(t, func(o *Options) { o.AllowPrivateAddresses = false })
}

func TestFetchRefusesInternalAddresses(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": page("Secret", "")})
	port := s.Listener.Addr().(*net.TCPAddr).Port
	portStr := ":" + strconv.Itoa(port)
	tests := []struct {
		name, url, want string
	}{
		{"loopback literal", s.URL + "/", "url: refused: 127.0.0.1 is a loopback address"},
		// localhost is resolved by DNS (/etc/hosts): the dial-time check
		// refuses the resolved address.
		{"localhost name, checked after resolution", "http://localhost" + portStr + "/", "is a loopback address"},
		{"mapped IPv6 literal", "http://[::ffff:127.0.0.1]" + portStr + "/", "embeds 127.0.0.1, a loopback address"},
		{"unspecified", "http://0.0.0.0" + portStr + "/", "is an unspecified address"},
		{"private", "http://10.0.0.1/", "url: refused: 10.0.0.1 is a private address"},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"metadata name", "http://metadata.google.internal/computeMetadata/v1/", "url: refused: metadata.google.internal is a cloud metadata service"},
		{"metadata name, trailing dot and case", "http://Metadata.Google.Internal./", "cloud metadata service"},
		{"CGNAT", "https://100.64.1.1/", "CGNAT"},
		{"NAT64 of loopback", "http://[64:ff9b::7f00:1]" + portStr + "/", "embeds 127.0.0.1"},
	}
	f := guardedFetcher(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), tt.url)
			wantKind(t, err, domain.ErrInvalidInput)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if n := len(s.requests()); n != 0 {
		t.Errorf("the internal server received %d requests, want 0", n)
	}
}

func TestFetchRefusesRedirectsToInternalAddresses(t *testing.T) {
	internal := newSite(t, map[string]http.HandlerFunc{"/": page("Internal", "")})
	iport := strconv.Itoa(internal.Listener.Addr().(*net.TCPAddr).Port)
	public := newSite(t, map[string]http.HandlerFunc{
		"/ok":             page("Public page", ""),
		"/to-self":        redirect(http.StatusFound, "/ok"),
		"/to-loopback":    redirect(http.StatusFound, internal.URL+"/"),
		"/to-localhost":   redirect(http.StatusMovedPermanently, "http://localhost:"+iport+"/"),
		"/to-private":     redirect(http.StatusFound, "http://10.0.0.1/admin"),
		"/to-metadata":    redirect(http.StatusTemporaryRedirect, "http://169.254.169.254/latest/meta-data/"),
		"/to-metadata-v6": redirect(http.StatusFound, "http://[fd00:ec2::254]/latest/meta-data/"),
		"/to-gce":         redirect(http.StatusFound, "http://metadata.google.internal/computeMetadata/v1/"),
		"/to-mapped":      redirect(http.StatusPermanentRedirect, "http://[::ffff:127.0.0.1]:"+iport+"/"),
		"/to-userinfo":    redirect(http.StatusFound, "http://admin:secret@example.com/"),
		"/to-file":        redirect(http.StatusFound, "file:///etc/passwd"),
		"/to-gopher":      redirect(http.StatusFound, "gopher://127.0.0.1:"+iport+"/"),
	})
	f := guardedFetcher(t)
	// TEST SEAM: the guard treats the "public" server as a public address,
	// so only its redirect targets meet the guard.
	f.guard.TreatAsPublicForTests(netip.MustParseAddrPort(public.Listener.Addr().String()))

	doc, err := f.Fetch(context.Background(), public.URL+"/to-self")
	if err != nil {
		t.Fatalf("redirect within the public site: %v", err)
	}
	if doc.URL != public.URL+"/ok" || doc.Title != "Public page" {
		t.Fatalf("doc = %q %q, want the redirect target", doc.URL, doc.Title)
	}

	tests := []struct{ path, want string }{
		{"/to-loopback", "url: refused: 127.0.0.1 is a loopback address"},
		{"/to-localhost", "is a loopback address"},
		{"/to-private", "url: refused: 10.0.0.1 is a private address"},
		{"/to-metadata", "url: refused: 169.254.169.254 is a link-local (cloud metadata) address"},
		{"/to-metadata-v6", "url: refused: fd00:ec2::254 is a unique-local address"},
		{"/to-gce", "url: refused: metadata.google.internal is a cloud metadata service"},
		{"/to-mapped", "embeds 127.0.0.1"},
		{"/to-userinfo", "url: must not contain a user name or password"},
		{"/to-file", "url: must use http or https"},
		{"/to-gopher", "url: must use http or https"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), public.URL+tt.path)
			wantKind(t, err, domain.ErrInvalidInput)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if n := len(internal.requests()); n != 0 {
		t.Errorf("the internal server received %d requests, want 0", n)
	}
}

func TestCrawlRefusesRobotsRedirectToInternalAddress(t *testing.T) {
	internal := newSite(t, map[string]http.HandlerFunc{"/robots.txt": robots("User-agent: *\nAllow: /\n")})
	public := newSite(t, map[string]http.HandlerFunc{
		"/robots.txt": redirect(http.StatusFound, internal.URL+"/robots.txt"),
		"/":           page("Home", ""),
	})
	f := guardedFetcher(t)
	f.guard.TreatAsPublicForTests(netip.MustParseAddrPort(public.Listener.Addr().String()))
	err := f.Crawl(context.Background(), public.URL+"/", domain.CrawlLimits{MaxPages: 5, MaxDepth: 2}, nil, func(ports.CrawlStep, *domain.Document) error { return nil })
	wantKind(t, err, domain.ErrInvalidInput)
	if !strings.Contains(err.Error(), "refused: 127.0.0.1 is a loopback address") {
		t.Errorf("err = %q", err)
	}
	if internal.count("/robots.txt") != 0 || public.count("/") != 0 {
		t.Errorf("requests: internal %v, public %v", internal.requests(), public.requests())
	}
}

func TestTransportIgnoresProxyEnvironment(t *testing.T) {
	// A proxy would make the connection for us, so the dial-time address
	// check would only ever see the proxy's address.
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	f := newFetcher(t, nil)
	tr, ok := f.client.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil {
		t.Fatalf("transport %T has a proxy function", f.client.Transport)
	}
	if tr.DialContext == nil {
		t.Fatal("transport dials without the guard")
	}
}
