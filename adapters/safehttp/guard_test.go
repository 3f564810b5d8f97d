package safehttp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

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
			got := Classify(netip.MustParseAddr(tt.ip))
			if !strings.Contains(got, tt.want) {
				t.Errorf("Classify(%s) = %q, want it to contain %q", tt.ip, got, tt.want)
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
		if got := Classify(netip.MustParseAddr(ip)); got != "" {
			t.Errorf("Classify(%s) = %q, want allowed", ip, got)
		}
	}
}

func TestGuardControl(t *testing.T) {
	tests := []struct {
		name    string
		g       Guard
		address string
		wantErr string // "" when the dial may proceed
	}{
		{"private", Guard{}, "10.0.0.1:80", "url: refused: 10.0.0.1 is a private address"},
		{"loopback v6", Guard{}, "[::1]:443", "url: refused: ::1 is a loopback address"},
		{"metadata", Guard{}, "169.254.169.254:80", "url: refused: 169.254.169.254 is a link-local (cloud metadata) address"},
		{"mapped", Guard{}, "[::ffff:127.0.0.1]:80", "url: refused: ::ffff:127.0.0.1 embeds 127.0.0.1, a loopback address"},
		{"zoned link-local", Guard{}, "[fe80::1%eth0]:80", "url: refused: fe80::1 is a link-local address"},
		{"public", Guard{}, "8.8.8.8:443", ""},
		{"public v6", Guard{}, "[2606:4700:4700::1111]:443", ""},
		{"unparseable", Guard{}, "nonsense", "url: refused: cannot check address"},
		{"relaxed for tests", Guard{allowPrivate: true}, "127.0.0.1:80", ""},
		{"seam: one address treated as public", Guard{public: map[netip.AddrPort]bool{netip.MustParseAddrPort("127.0.0.1:8080"): true}}, "127.0.0.1:8080", ""},
		{"seam: other ports still refused", Guard{public: map[netip.AddrPort]bool{netip.MustParseAddrPort("127.0.0.1:8080"): true}}, "127.0.0.1:8081", "url: refused: 127.0.0.1 is a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.g.Control("tcp", tt.address, nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("control(%s) = %v, want nil", tt.address, err)
				}
				return
			}
			if !errors.Is(err, domain.ErrInvalidInput) {
				t.Fatalf("control(%s) = %v, want an ErrInvalidInput", tt.address, err)
			}
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

func TestGuardDialContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	tests := []struct {
		name    string
		g       *Guard
		addr    string
		wantErr string
	}{
		{"loopback refused after resolution", NewGuard(false), "localhost:" + port, "is a loopback address"},
		{"loopback literal refused before dialling", NewGuard(false), "127.0.0.1:" + port, "url: refused: 127.0.0.1 is a loopback address"},
		{"metadata name refused before resolution", NewGuard(true), "metadata.google.internal:80", "cloud metadata service"},
		{"relaxed for tests", NewGuard(true), "127.0.0.1:" + port, ""},
		{"unsplittable address", NewGuard(true), "nonsense", "cannot check address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dial := tt.g.DialContext(&net.Dialer{Timeout: time.Second, Control: tt.g.Control})
			conn, err := dial(context.Background(), "tcp", tt.addr)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("dial %s: %v", tt.addr, err)
				}
				_ = conn.Close()
				return
			}
			if err == nil {
				_ = conn.Close()
				t.Fatalf("dial %s succeeded, want a refusal", tt.addr)
			}
			if !errors.Is(err, domain.ErrInvalidInput) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("dial %s: %v, want an ErrInvalidInput containing %q", tt.addr, err, tt.wantErr)
			}
		})
	}
	if g := NewGuard(false); g.AllowsPrivate() || !NewGuard(true).AllowsPrivate() {
		t.Error("AllowsPrivate does not report the relaxation")
	}
	g := NewGuard(false)
	ap := netip.MustParseAddrPort(ln.Addr().String())
	g.TreatAsPublicForTests(ap)
	if err := g.CheckAddr(ap); err != nil {
		t.Errorf("an address treated as public was refused: %v", err)
	}
}
