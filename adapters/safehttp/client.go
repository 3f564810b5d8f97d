package safehttp

import (
	"net"
	"net/http"
	"time"
)

// ClientOptions size a guarded client. Zero pool sizes take net/http's.
type ClientOptions struct {
	// Timeout bounds dialling and the wait for the response's headers.
	Timeout             time.Duration
	MaxIdleConns        int
	MaxIdleConnsPerHost int
}

// Client returns an HTTP client whose every connection goes through g:
// the dial checks the address it connects to, proxies from the environment
// are ignored (a proxy would connect for us, past the guard), and redirects
// are answered rather than followed, so whoever follows one checks each
// hop. It bounds the request's phases, not the whole request: callers set
// the client's Timeout or use their context for that.
func (g *Guard) Client(o ClientOptions) *http.Client {
	dialer := &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second, Control: g.Control}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext(dialer),
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  o.Timeout,
		MaxIdleConns:           o.MaxIdleConns,
		MaxIdleConnsPerHost:    o.MaxIdleConnsPerHost,
		IdleConnTimeout:        60 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
