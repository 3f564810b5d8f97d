package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

func TestClassifyRefusesInternalAddresses(t *testing.T) {
	tests := []struct {
		ip   string
		want string // substring of the reason
	}{
		{"10.0.0.1", "is a private address"},
		{"10.255.255.255", "is a private address"},
		{"172.16.0.1", "is a private address"},
		{"172.31.255.254", "is a private address"},
		{"192.168.1.1", "is a private address"},
		{"127.0.0.1", "is a loopback address"},
		{"127.8.9.10", "is a loopback address"},
		{"169.254.169.254", "cloud metadata"},
		{"169.254.1.1", "is a link-local address"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.254", "CGNAT"},
		{"0.0.0.0", "is an unspecified address"},
		{"0.1.2.3", "this network"},
		{"224.0.0.1", "is a multicast address"},
		{"239.255.255.250", "is a multicast address"},
		{"255.255.255.255", "is the broadcast address"},
		{"240.0.0.1", "is a reserved address"},
		{"192.0.0.8", "is a reserved address"},
		{"192.0.2.1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"::1", "is a loopback address"},
		{"::", "is an unspecified address"},
		{"fe80::1", "is a link-local address"},
		{"fe80::1%eth0", "is a link-local address"},
		{"febf::1", "is a link-local address"},
		{"fc00::1", "is a unique-local address"},
		{"fd12:3456:789a::1", "is a unique-local address"},
		{"fec0::1", "is a site-local address"},
		{"ff02::1", "is a multicast address"},
		{"2001:db8::1", "documentation"},
		// IPv4-mapped forms.
		{"::ffff:127.0.0.1", "embeds 127.0.0.1, a loopback address"},
		{"::ffff:10.0.0.1", "embeds 10.0.0.1, a private address"},
		{"::ffff:169.254.169.254", "embeds 169.254.169.254, a link-local (cloud metadata) address"},
		{"::ffff:0.0.0.0", "embeds 0.0.0.0, an unspecified address"},
		{"::ffff:100.64.0.1", "CGNAT"},
		// IPv4-compatible (deprecated) forms: refused whatever they embed.
		{"::127.0.0.1", "embeds 127.0.0.1, a loopback address"},
		{"::10.0.0.1", "embeds 10.0.0.1, a private address"},
		{"::8.8.8.8", "is an IPv4-compatible address"},
		// IPv4-translated.
		{"::ffff:0:10.0.0.1", "embeds 10.0.0.1, a private address"},
		// NAT64 well-known and local-use prefixes.
		{"64:ff9b::127.0.0.1", "embeds 127.0.0.1, a loopback address"},
		{"64:ff9b::a9fe:a9fe", "embeds 169.254.169.254"},
		{"64:ff9b::192.168.0.1", "embeds 192.168.0.1, a private address"},
		{"64:ff9b:1::1", "local-use NAT64"},
		// 6to4 and Teredo (client address inverted).
		{"2002:7f00:1::1", "embeds 127.0.0.1, a loopback address"},
		{"2002:a00:1::", "embeds 10.0.0.1, a private address"},
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", "embeds 10.0.0.1, a private address"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			got := classify(netip.MustParseAddr(tt.ip))
			if !strings.Contains(got, tt.want) {
				t.Errorf("classify(%s) = %q, want it to contain %q", tt.ip, got, tt.want)
			}
		})
	}
}

func TestClassifyAllowsPublicAddresses(t *testing.T) {
	for _, ip := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.15.255.255", "172.32.0.1", "100.63.255.255",
		"100.128.0.1", "169.253.255.255", "11.0.0.1", "223.255.255.255",
		"2606:4700:4700::1111", "2a00:1450:4001:81c::200e",
		"::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
	} {
		if got := classify(netip.MustParseAddr(ip)); got != "" {
			t.Errorf("classify(%s) = %q, want allowed", ip, got)
		}
	}
}

func TestGuardControl(t *testing.T) {
	tests := []struct {
		name    string
		g       guard
		address string
		wantErr string // "" when the dial may proceed
	}{
		{"private", guard{}, "10.0.0.1:80", "url: refused: 10.0.0.1 is a private address"},
		{"loopback v6", guard{}, "[::1]:443", "url: refused: ::1 is a loopback address"},
		{"metadata", guard{}, "169.254.169.254:80", "url: refused: 169.254.169.254 is a link-local (cloud metadata) address"},
		{"mapped", guard{}, "[::ffff:127.0.0.1]:80", "url: refused: ::ffff:127.0.0.1 embeds 127.0.0.1, a loopback address"},
		{"zoned link-local", guard{}, "[fe80::1%eth0]:80", "url: refused: fe80::1 is a link-local address"},
		{"public", guard{}, "8.8.8.8:443", ""},
		{"public v6", guard{}, "[2606:4700:4700::1111]:443", ""},
		{"unparseable", guard{}, "nonsense", "url: refused: cannot check address"},
		{"relaxed for tests", guard{allowPrivate: true}, "127.0.0.1:80", ""},
		{"seam: one address treated as public", guard{public: map[netip.AddrPort]bool{netip.MustParseAddrPort("127.0.0.1:8080"): true}}, "127.0.0.1:8080", ""},
		{"seam: other ports still refused", guard{public: map[netip.AddrPort]bool{netip.MustParseAddrPort("127.0.0.1:8080"): true}}, "127.0.0.1:8081", "url: refused: 127.0.0.1 is a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.g.control("tcp", tt.address, nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("control(%s) = %v, want nil", tt.address, err)
				}
				return
			}
			wantKind(t, err, domain.ErrInvalidInput)
			if !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("control(%s) = %q, want %q", tt.address, err, tt.wantErr)
			}
			var ve *domain.ValidationError
			if errors.As(err, &ve); ve.Fields["url"] == "" {
				t.Errorf("error names no field: %#v", ve)
			}
		})
	}
}

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
	f.guard.public = map[netip.AddrPort]bool{netip.MustParseAddrPort(public.Listener.Addr().String()): true}

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
	f.guard.public = map[netip.AddrPort]bool{netip.MustParseAddrPort(public.Listener.Addr().String()): true}
	err := f.Crawl(context.Background(), public.URL+"/", domain.CrawlLimits{MaxPages: 5, MaxDepth: 2}, func(domain.Document) error { return nil })
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
