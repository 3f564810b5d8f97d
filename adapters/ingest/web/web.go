// Package web fetches web pages and crawls websites on a workspace's behalf,
// implementing ports.WebFetcher with plain net/http.
//
// Every connection goes through an address guard (adapters/safehttp, shared
// with the webhook senders) that runs on the IP actually
// dialled, after DNS resolution, so redirects, robots.txt and sitemap fetches
// are covered too and a DNS answer cannot change between check and dial.
// Proxies from the environment are ignored: a proxy would dial on our behalf
// and bypass the guard.
//
// Fetch is a single, user-directed download: it does not consult robots.txt
// or <meta name="robots">. Crawl does both, and paces its requests.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/conciergehq/concierge/adapters/safehttp"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Defaults of Options.
const (
	// DefaultUserAgent names the crawler and where to learn about it; its
	// first token, "ConciergeBot", is the agent robots.txt groups are
	// matched against.
	DefaultUserAgent = "ConciergeBot/1.0 (+https://github.com/conciergehq/concierge; support knowledge indexer)"
	// DefaultTimeout bounds one HTTP request, body included.
	DefaultTimeout = 15 * time.Second
	// DefaultMaxBodyBytes caps a page's body.
	DefaultMaxBodyBytes = 5 << 20
	// DefaultMaxRedirects caps the redirects followed per request.
	DefaultMaxRedirects = 5
	// DefaultMaxCrawlDelay caps a robots.txt Crawl-delay (and a 429's
	// Retry-After), so a hostile or careless site cannot stall a crawl job.
	DefaultMaxCrawlDelay = 10 * time.Second
	// DefaultPoliteDelay is the default of Options.DefaultCrawlDelay.
	DefaultPoliteDelay = 250 * time.Millisecond
)

// Bounds of options and crawl limits.
const (
	// MaxPagesLimit is the largest domain.CrawlLimits.MaxPages accepted.
	MaxPagesLimit = 10_000
	// MaxDepthLimit is the largest domain.CrawlLimits.MaxDepth accepted.
	MaxDepthLimit = 20

	maxTimeout       = 5 * time.Minute
	maxBodyBytes     = 100 << 20
	maxRedirects     = 20
	maxCrawlDelayCap = 5 * time.Minute
)

// Options configure a Fetcher. Zero values take the documented defaults.
type Options struct {
	// UserAgent is sent with every request; DefaultUserAgent when empty. Its
	// first product token (up to '/' or a space) is the agent name matched
	// against robots.txt groups.
	UserAgent string
	// Timeout bounds each HTTP request including reading its body;
	// DefaultTimeout when zero, at most 5 minutes.
	Timeout time.Duration
	// MaxBodyBytes caps a page's body; DefaultMaxBodyBytes when zero, at
	// most 100 MiB. Sitemaps have their own cap of 50 MiB (the limit of the
	// sitemaps protocol).
	MaxBodyBytes int64
	// MaxRedirects caps the redirects followed per request;
	// DefaultMaxRedirects when zero, at most 20.
	MaxRedirects int
	// Extract turns a page's raw HTML into a document; pageURL is the page's
	// address after redirects. Required.
	Extract func(body []byte, pageURL string) (domain.Document, error)
	// AllowPrivateAddresses is FOR TESTS ONLY: it lets the fetcher connect to
	// private, loopback and other internal addresses so tests can crawl an
	// httptest server on 127.0.0.1. It relaxes only the address check; the
	// scheme, userinfo and cloud-metadata host name checks still apply.
	// Never set it in production: it reopens server-side request forgery.
	AllowPrivateAddresses bool
	// MaxCrawlDelay caps a robots.txt Crawl-delay and a 429's Retry-After;
	// DefaultMaxCrawlDelay when zero, at most 5 minutes.
	MaxCrawlDelay time.Duration
	// DefaultCrawlDelay is the pause between two requests to one host when
	// robots.txt sets no Crawl-delay. Zero means DefaultPoliteDelay; a
	// negative value means no pause (as net.Dialer.KeepAlive treats
	// negatives), which tests use.
	DefaultCrawlDelay time.Duration
	// Logger receives debug lines about skipped pages and a summary per
	// crawl; discarded when nil.
	Logger *slog.Logger
}

// Fetcher reads web pages and crawls websites. It is safe for concurrent use.
type Fetcher struct {
	opts    Options
	agent   string // robots.txt agent token, from the user agent
	guard   *safehttp.Guard
	client  *http.Client
	log     *slog.Logger
	delay   time.Duration // default pause between requests to one host
	maxWait time.Duration
}

var _ ports.WebFetcher = (*Fetcher)(nil)

// New validates opts, applies defaults and returns a Fetcher.
func New(opts Options) (*Fetcher, error) {
	if err := withDefaults(&opts); err != nil {
		return nil, err
	}
	g := safehttp.NewGuard(opts.AllowPrivateAddresses)
	// The client answers redirects rather than following them: get follows
	// them by hand, so each hop is checked, paced and, while crawling,
	// tested against robots.txt.
	client := g.Client(safehttp.ClientOptions{Timeout: opts.Timeout, MaxIdleConns: 16, MaxIdleConnsPerHost: 2})
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	delay := opts.DefaultCrawlDelay
	if delay < 0 {
		delay = 0
	}
	return &Fetcher{
		opts:    opts,
		agent:   agentToken(opts.UserAgent),
		guard:   g,
		client:  client,
		log:     log,
		delay:   delay,
		maxWait: opts.MaxCrawlDelay,
	}, nil
}

func withDefaults(o *Options) error {
	if o.Extract == nil {
		return errors.New("web: Options.Extract is required")
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if strings.ContainsAny(o.UserAgent, "\r\n") || agentToken(o.UserAgent) == "" {
		return errors.New("web: Options.UserAgent must be one line starting with a product token")
	}
	type bound struct {
		name     string
		val      *time.Duration
		def, max time.Duration
	}
	for _, b := range []bound{
		{"Timeout", &o.Timeout, DefaultTimeout, maxTimeout},
		{"MaxCrawlDelay", &o.MaxCrawlDelay, DefaultMaxCrawlDelay, maxCrawlDelayCap},
	} {
		switch {
		case *b.val < 0 || *b.val > b.max:
			return fmt.Errorf("web: Options.%s must be between 0 and %s, got %s", b.name, b.max, *b.val)
		case *b.val == 0:
			*b.val = b.def
		}
	}
	switch {
	case o.MaxBodyBytes < 0 || o.MaxBodyBytes > maxBodyBytes:
		return fmt.Errorf("web: Options.MaxBodyBytes must be between 0 and %d, got %d", maxBodyBytes, o.MaxBodyBytes)
	case o.MaxBodyBytes == 0:
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	switch {
	case o.MaxRedirects < 0 || o.MaxRedirects > maxRedirects:
		return fmt.Errorf("web: Options.MaxRedirects must be between 0 and %d, got %d", maxRedirects, o.MaxRedirects)
	case o.MaxRedirects == 0:
		o.MaxRedirects = DefaultMaxRedirects
	}
	switch {
	case o.DefaultCrawlDelay > o.MaxCrawlDelay:
		return fmt.Errorf("web: Options.DefaultCrawlDelay (%s) exceeds MaxCrawlDelay (%s)", o.DefaultCrawlDelay, o.MaxCrawlDelay)
	case o.DefaultCrawlDelay == 0:
		o.DefaultCrawlDelay = min(DefaultPoliteDelay, o.MaxCrawlDelay)
	}
	return nil
}

// agentToken is the product name at the start of a user agent:
// "ConciergeBot/1.0 (...)" gives "ConciergeBot".
func agentToken(ua string) string {
	ua = strings.TrimSpace(ua)
	if i := strings.IndexAny(ua, "/ \t"); i >= 0 {
		ua = ua[:i]
	}
	return ua
}

// Fetch downloads one page and extracts its text. It follows redirects
// (each hop checked), accepts only HTML and XHTML, and sets Document.URL to
// the page's address after redirects, without fragment.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (domain.Document, error) {
	u, err := parseTarget(rawURL)
	if err != nil {
		return domain.Document{}, err
	}
	page, err := f.get(ctx, u, acceptHTML, nil)
	if err != nil {
		return domain.Document{}, err
	}
	defer page.close()
	if err := page.statusError(); err != nil {
		return domain.Document{}, err
	}
	body, err := f.readPage(ctx, page)
	if err != nil {
		return domain.Document{}, err
	}
	final := page.url.String()
	doc, err := f.opts.Extract(body, final)
	if err != nil {
		return domain.Document{}, err
	}
	doc.URL = final
	return doc, nil
}
