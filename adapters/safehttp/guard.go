// Package safehttp is the address guard every adapter that fetches or posts
// to a URL on a workspace's behalf dials through, and the HTTP client built
// on it (Guard.Client): the website crawler and the webhook senders. It refuses private, loopback, link-local and other
// internal addresses after DNS resolution, on the exact address connected
// to, so neither a DNS answer nor a redirect can point a request inside the
// operator's network.
//
// It is a shared client library in the sense of core/architecture_test.go:
// it implements no port and imports no adapter, so sharing it couples no two
// adapters' behaviour.
package safehttp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"github.com/conciergehq/concierge/core/domain"
)

// Guard refuses connections to addresses inside the operator's network:
// private, loopback, link-local (cloud metadata lives at 169.254.169.254),
// unique-local, shared (CGNAT), multicast and reserved ranges, and IPv6 forms
// that embed such an IPv4 address. It is safe for concurrent use once built.
type Guard struct {
	// allowPrivate turns the address check off (tests only).
	allowPrivate bool
	// public is a TEST SEAM: addresses the guard treats as public, so a test
	// can stand a "public" httptest server on 127.0.0.1 and check what happens
	// when it redirects elsewhere. Nil in production; set only by tests
	// (TreatAsPublicForTests) before the first request.
	public map[netip.AddrPort]bool
}

// NewGuard returns a guard. allowPrivate is FOR TESTS ONLY: it lets
// connections reach private, loopback and other internal addresses so tests
// can talk to an httptest server on 127.0.0.1. It relaxes only the address
// check; cloud-metadata host names are still refused. Never set it in
// production: it reopens server-side request forgery.
func NewGuard(allowPrivate bool) *Guard { return &Guard{allowPrivate: allowPrivate} }

// AllowsPrivate reports whether the test-only relaxation is on.
func (g *Guard) AllowsPrivate() bool { return g.allowPrivate }

// TreatAsPublicForTests is a TEST SEAM: the guard accepts these exact
// addresses as if they were public, so a test can stand a "public" server on
// 127.0.0.1 and see what happens when it redirects elsewhere. Call it before
// the first request; never in production code.
func (g *Guard) TreatAsPublicForTests(aps ...netip.AddrPort) {
	if g.public == nil {
		g.public = map[netip.AddrPort]bool{}
	}
	for _, ap := range aps {
		g.public[ap] = true
	}
}

// blockedHosts are names of cloud metadata services. They resolve to
// link-local addresses the dial check refuses anyway; naming them refuses
// them before any DNS query and with a clearer message.
var blockedHosts = map[string]bool{
	"metadata.google.internal": true,
	"metadata.goog":            true,
	"metadata":                 true,
}

// refusedRange is one range of addresses the guard refuses, and why.
type refusedRange struct {
	prefix netip.Prefix
	what   string
}

// refusedV4 are the IPv4 ranges never dialled. IPv6 forms embedding IPv4
// addresses are checked against this table too.
var refusedV4 = []refusedRange{
	{netip.MustParsePrefix("0.0.0.0/32"), "an unspecified address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.169.254/32"), "a link-local (cloud metadata) address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT) address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "a reserved address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
}

// refusedV6 are the IPv6 ranges never dialled, besides those embedding IPv4
// addresses (see embeddedV4).
var refusedV6 = []refusedRange{
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fc00::/7"), "a unique-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("100::/64"), "a discard address"},
	// Deprecated IPv4-compatible addresses (::a.b.c.d) are never routed to
	// anything legitimate; refuse the whole range.
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "an IPv4-translated address"},
}

var (
	nat64Prefix      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour        = netip.MustParsePrefix("2002::/16")
	teredoPrefix     = netip.MustParsePrefix("2001::/32")
	v4Compatible     = netip.MustParsePrefix("::/96")
	v4Translated     = netip.MustParsePrefix("::ffff:0:0:0/96")
	unspecifiedOrOne = netip.MustParsePrefix("::/127") // :: and ::1
)

// Classify says why ip must not be dialled ("is a private address",
// "embeds 10.0.0.1, a private address"), or "" when it may.
func Classify(ip netip.Addr) string {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return "is not a valid address"
	}
	if ip.Is4In6() {
		if why := classify4(ip.Unmap()); why != "" {
			return "embeds " + ip.Unmap().String() + ", " + why
		}
		return ""
	}
	if ip.Is4() {
		if why := classify4(ip); why != "" {
			return "is " + why
		}
		return ""
	}
	if v4, ok := embeddedV4(ip); ok {
		if why := classify4(v4); why != "" {
			return "embeds " + v4.String() + ", " + why
		}
	}
	for _, r := range refusedV6 {
		if r.prefix.Contains(ip) {
			return "is " + r.what
		}
	}
	return ""
}

func classify4(ip netip.Addr) string {
	for _, r := range refusedV4 {
		if r.prefix.Contains(ip) {
			return r.what
		}
	}
	return ""
}

// embeddedV4 extracts the IPv4 address that an IPv4-compatible (::/96),
// IPv4-translated (::ffff:0:0:0/96), NAT64 (64:ff9b::/96), 6to4 (2002::/16)
// or Teredo (2001::/32, client address inverted) address routes to, since a
// translator on the path would deliver our packets there.
func embeddedV4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case unspecifiedOrOne.Contains(ip):
		return netip.Addr{}, false
	case v4Compatible.Contains(ip), v4Translated.Contains(ip), nat64Prefix.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case teredoPrefix.Contains(ip):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return netip.Addr{}, false
}

// refused is the error for a refused address or host.
func refused(format string, args ...any) error {
	return domain.InvalidField("url", "refused: "+fmt.Sprintf(format, args...))
}

// CheckAddr refuses ap unless its address is public (or the guard is
// relaxed). The error is a domain.ValidationError on the field "url".
func (g *Guard) CheckAddr(ap netip.AddrPort) error {
	if g.allowPrivate || g.public[ap] {
		return nil
	}
	if why := Classify(ap.Addr()); why != "" {
		return refused("%s %s", ap.Addr().WithZone(""), why)
	}
	return nil
}

// CheckHost refuses metadata host names and, for IP literals, refuses early
// what the dial check would refuse, with the same message. port is the
// effective port ("80" for http when none is given). Names are not resolved
// here: the dial checks what they resolve to.
func (g *Guard) CheckHost(host, port string) error {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if blockedHosts[name] {
		return refused("%s is a cloud metadata service", name)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ap, err := netip.ParseAddrPort(net.JoinHostPort(ip.String(), port))
		if err != nil {
			return domain.InvalidField("url", "the port is not valid")
		}
		return g.CheckAddr(ap)
	}
	if numericHost(name) {
		return refused("%s is an IPv4 address in a non-standard form; write it as four decimal numbers (a.b.c.d)", host)
	}
	return nil
}

// numericHost reports whether a host that is not an IP literal still spells
// an IPv4 address the way resolvers accept (inet_aton): 2130706433,
// 0x7f000001, 127.1, 0177.0.0.1 all reach 127.0.0.1. Left to DNS they would
// pass this check and only be caught at dial time, so a settings check
// would accept a URL no delivery can reach. No DNS name ends in a numeric
// label (top-level domains are never numeric), so nothing real is refused.
func numericHost(name string) bool {
	labels := strings.Split(name, ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		last = hex
		if last == "" {
			return true // "0x" alone is 0 to inet_aton
		}
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// CheckURL is CheckHost for u's host and the port a request to u connects
// to: u's own, or 443 for https and 80 otherwise.
func (g *Guard) CheckURL(u *url.URL) error {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return g.CheckHost(u.Hostname(), port)
}

// Control runs as net.Dialer.Control: after DNS resolution, on the exact
// address about to be connected to, for every address tried. Checking here
// rather than before resolving closes the DNS-rebinding window.
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refused("cannot check address %q", address)
	}
	return g.CheckAddr(ap)
}

// DialContext wraps d so host names of metadata services are refused before
// they are resolved; d's Control must be g.Control, which checks the
// resolved addresses. Use it as http.Transport.DialContext, with Proxy nil:
// a proxy would make the connection for us, past the guard.
func (g *Guard) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, refused("cannot check address %q", addr)
		}
		if err := g.CheckHost(host, port); err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, addr)
	}
}
