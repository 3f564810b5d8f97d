package web

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

const (
	// maxQueued bounds the URLs a crawl remembers (queued or fetched).
	maxQueued = 100_000
	// rateLimitWait is the pause after a 429 without a usable Retry-After.
	rateLimitWait = time.Second
)

// Reasons a crawl request stops at a redirect hop.
var (
	errOffSite = errors.New("redirects off the site")
	errSeen    = errors.New("redirects to a page already fetched")
)

// Crawl visits a website breadth-first from start, calling visit once per
// extracted page, in crawl order, with Document.URL set to the page's
// address after redirects.
//
// The start may be a page or a sitemap (a <urlset> or <sitemapindex>, also
// gzipped): the answer's Content-Type decides, so "…/sitemap.xml" and an
// extension-less sitemap both work. Sitemap entries are depth 1; nested
// indexes are followed three files deep, 50 files and 50,000 URLs at most.
//
// The site is the start's host (and non-default port) after redirects:
// starting at example.com that redirects to www.example.com crawls
// www.example.com. Other hosts, www variants included, are never requested,
// and a redirect leaving the site skips the page. http and https of one host
// are one site.
//
// robots.txt is read once per origin, before the first request to it (see
// fetchRobots for how missing and failing files are treated), and applies
// to every request, redirect hops and sitemaps included; its Crawl-delay
// for our agent, capped by MaxCrawlDelay, paces requests to the host,
// DefaultCrawlDelay otherwise. A 429 answer raises the host's delay to its
// Retry-After (capped likewise) and the page is retried once. Pages marked
// noindex (meta robots or X-Robots-Tag) are not visited, and the links of
// nofollow pages, and rel="nofollow" links, are not followed.
//
// Links are taken from <a> and <area> elements of the raw HTML; fragments
// are dropped, other schemes and links to files that are never pages
// (images, styles, scripts, archives, PDFs ...) ignored. A page reached
// under several URLs (redirects, default ports, fragments) is visited once.
//
// Crawl stops when MaxPages pages were visited, the queue is empty, or
// 3×MaxPages+10 page requests were made (so a site of failing or noindex
// pages cannot keep a job busy). Limits must be 1..MaxPagesLimit pages and
// 1..MaxDepthLimit links deep.
//
// Every page request is recorded (see ports.CrawlStep): the URL asked for,
// where it led, whether it gave a page, and the links it queued. Given
// those steps back as resume, Crawl rebuilds its queue and what it has seen
// from them and goes on as if it had never stopped: the pages of those
// steps are not requested again (robots.txt is read again, once).
//
// Crawl returns the start's error (as Fetch would, or a robots.txt that
// forbids or cannot be read), record's error as is, or ctx's error; failing
// pages after the start are skipped and logged at debug level.
func (f *Fetcher) Crawl(ctx context.Context, start string, limits domain.CrawlLimits, resume []ports.CrawlStep, record func(ports.CrawlStep, *domain.Document) error) error {
	if err := validateLimits(limits); err != nil {
		return err
	}
	if record == nil {
		return errors.New("web: Crawl needs a record function")
	}
	u, err := parseTarget(start)
	if err != nil {
		return err
	}
	c := &crawl{
		f:      f,
		limits: limits,
		record: record,
		robots: map[string]*robotsRules{},
		hosts:  map[string]*hostPace{},
		seen:   map[string]bool{},
		done:   map[string]bool{},
	}
	if len(resume) > 0 {
		if err := c.replay(u, resume); err != nil {
			return err
		}
		err = c.crawlQueue(ctx)
	} else {
		err = c.run(ctx, u)
	}
	f.log.InfoContext(ctx, "crawl finished", "start", u.String(), "resumed", len(resume), "visited", c.visited,
		"requested", c.requested, "left", len(c.queue), "error", err)
	return err
}

func validateLimits(l domain.CrawlLimits) error {
	fields := map[string]string{}
	if l.MaxPages < 1 || l.MaxPages > MaxPagesLimit {
		fields["maxPages"] = fmt.Sprintf("must be between 1 and %d", MaxPagesLimit)
	}
	if l.MaxDepth < 1 || l.MaxDepth > MaxDepthLimit {
		fields["maxDepth"] = fmt.Sprintf("must be between 1 and %d", MaxDepthLimit)
	}
	if len(fields) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(fields))
	for _, k := range []string{"maxPages", "maxDepth"} {
		if v, ok := fields[k]; ok {
			msgs = append(msgs, k+": "+v)
		}
	}
	return &domain.ValidationError{Message: "crawl limits: " + strings.Join(msgs, "; "), Fields: fields}
}

// crawl is the state of one Crawl call; it is used by one goroutine.
type crawl struct {
	f      *Fetcher
	limits domain.CrawlLimits
	record func(ports.CrawlStep, *domain.Document) error

	site   string                  // hostKey of the site, once the start answered
	robots map[string]*robotsRules // by origin, scheme://host
	hosts  map[string]*hostPace    // by hostKey
	seen   map[string]bool         // URLs queued or requested
	done   map[string]bool         // URLs answered, and the final URLs they led to
	queue  []item

	visited   int // pages recorded with a document
	requested int // page requests after the start
	// queued collects the URLs enqueue adds while one step is handled,
	// for its record.
	queued []string
}

// item is a queued page and its link distance from the start.
type item struct {
	u     *url.URL
	key   string
	depth int
}

// hostPace spaces requests to one host.
type hostPace struct {
	delay time.Duration
	next  time.Time // no request before this
}

// policy is the crawler's hopPolicy.
type policy struct {
	c *crawl
	// anyHost lets the request leave the site (the start, which defines
	// it, and robots.txt, whose redirects RFC 9309 lets us follow).
	anyHost bool
	// robots tests each hop against robots.txt; off only for robots.txt.
	robots bool
}

func (p policy) before(ctx context.Context, u *url.URL) error {
	if !p.anyHost && hostKey(u) != p.c.site {
		return errOffSite
	}
	// A redirect to a page already fetched ends here, without asking for
	// it again. (The run loop checks the first hop before calling get.)
	if p.c.done[u.String()] {
		return errSeen
	}
	if p.robots {
		rules, err := p.c.robotsFor(ctx, u)
		if err != nil {
			return err
		}
		if err := rules.allows(u); err != nil {
			return err
		}
	}
	return sleep(ctx, time.Until(p.c.host(u).next))
}

func (p policy) after(u *url.URL) {
	h := p.c.host(u)
	h.next = time.Now().Add(h.delay)
}

func (c *crawl) host(u *url.URL) *hostPace {
	k := hostKey(u)
	h, ok := c.hosts[k]
	if !ok {
		h = &hostPace{delay: c.f.delay}
		c.hosts[k] = h
	}
	return h
}

// robotsFor returns the rules of u's origin, reading robots.txt on first
// use and setting the host's pace from its Crawl-delay.
func (c *crawl) robotsFor(ctx context.Context, u *url.URL) (*robotsRules, error) {
	origin := u.Scheme + "://" + u.Host
	if r, ok := c.robots[origin]; ok {
		return r, nil
	}
	r, err := c.fetchRobots(ctx, u)
	if err != nil {
		return nil, err
	}
	c.robots[origin] = r
	if r.group != nil && r.group.CrawlDelay > 0 {
		h := c.host(u)
		h.delay = min(r.group.CrawlDelay, c.f.maxWait)
		h.next = time.Now().Add(h.delay)
	}
	return r, nil
}

// getPaced requests u under pol and, when the answer is 429, waits for
// Retry-After (capped by MaxCrawlDelay), keeps that as the host's delay,
// and tries once more.
func (c *crawl) getPaced(ctx context.Context, u *url.URL, accept string, pol policy) (*response, error) {
	r, err := c.f.get(ctx, u, accept, pol)
	if err != nil || r.resp.StatusCode != 429 {
		return r, err
	}
	wait := retryAfter(r.resp.Header, time.Now())
	if wait <= 0 {
		wait = rateLimitWait
	}
	wait = min(wait, c.f.maxWait)
	h := c.host(r.url)
	h.delay = max(h.delay, wait)
	h.next = time.Now().Add(wait)
	r.close()
	return c.f.get(ctx, u, accept, pol)
}

func (c *crawl) run(ctx context.Context, start *url.URL) error {
	r, err := c.getPaced(ctx, start, acceptStart, policy{c: c, anyHost: true, robots: true})
	if err != nil {
		return err
	}
	if err := r.statusError(); err != nil {
		r.close()
		return err
	}
	c.site = hostKey(r.url)
	for _, k := range []string{start.String(), r.url.String()} {
		c.seen[k], c.done[k] = true, true
	}
	step := ports.CrawlStep{URL: start.String(), FinalURL: finalURL(start.String(), r.url), Start: true}
	var doc *domain.Document
	c.queued = nil
	if isSitemapStart(r) {
		entries, err := c.sitemapEntries(ctx, r)
		if err != nil {
			return err
		}
		for _, e := range entries {
			c.enqueue(e, 1)
		}
	} else if doc, err = c.page(ctx, r, 0, true); err != nil {
		return err
	}
	if err := c.recordStep(step, doc); err != nil {
		return err
	}
	return c.crawlQueue(ctx)
}

// crawlQueue requests queued pages, breadth-first, until the queue is
// empty or a limit is reached, recording a step for each request made.
func (c *crawl) crawlQueue(ctx context.Context) error {
	pages := policy{c: c, robots: true}
	budget := 3*c.limits.MaxPages + 10
	for len(c.queue) > 0 && c.visited < c.limits.MaxPages && c.requested < budget {
		if err := ctx.Err(); err != nil {
			return err
		}
		it := c.queue[0]
		c.queue = c.queue[1:]
		if c.done[it.key] {
			continue
		}
		doc, final, err := c.request(ctx, it, pages)
		if err != nil {
			return err
		}
		if err := c.recordStep(ports.CrawlStep{URL: it.key, FinalURL: final, Depth: it.depth}, doc); err != nil {
			return err
		}
	}
	return nil
}

// request asks for one queued page and reads it. It returns the page's
// document (nil when the page was skipped) and where redirects led ("" when
// nowhere else); its only error is ctx's.
func (c *crawl) request(ctx context.Context, it item, pages policy) (*domain.Document, string, error) {
	c.requested++
	c.queued = nil
	r, err := c.getPaced(ctx, it.u, acceptHTML, pages)
	c.done[it.key] = true
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, "", ctxErr
		}
		c.skip(ctx, it.u, err)
		return nil, "", nil
	}
	final := finalURL(it.key, r.url)
	if err := r.statusError(); err != nil {
		r.close()
		c.skip(ctx, it.u, err)
		return nil, final, nil
	}
	if final != "" {
		if c.done[final] {
			r.close()
			c.f.log.DebugContext(ctx, "crawl: redirect to a page already seen", "url", it.key, "to", final)
			return nil, final, nil
		}
		c.seen[final], c.done[final] = true, true
	}
	doc, err := c.page(ctx, r, it.depth, false)
	return doc, final, err
}

// recordStep hands a finished request to record, with the links it queued.
func (c *crawl) recordStep(step ports.CrawlStep, doc *domain.Document) error {
	step.Visited = doc != nil
	step.Links = c.queued
	c.queued = nil
	if err := c.record(step, doc); err != nil {
		return err
	}
	if doc != nil {
		c.visited++
	}
	return nil
}

// finalURL is where a request for key ended, or "" if there.
func finalURL(key string, u *url.URL) string {
	if s := u.String(); s != key {
		return s
	}
	return ""
}

// replay rebuilds the state a crawl from start had after the steps it
// recorded: the site, every URL seen and answered, the queue in its order,
// and the counts the limits apply to. The steps are ours, from an earlier
// Crawl, but they come back from storage, so anything that does not fit
// is an error rather than a guess.
func (c *crawl) replay(start *url.URL, steps []ports.CrawlStep) error {
	first := steps[0]
	if !first.Start || first.URL != start.String() {
		return fmt.Errorf("web: the crawl to resume began at %q, not at the start %q", first.URL, start)
	}
	site := start
	if first.FinalURL != "" {
		u, err := parseTarget(first.FinalURL)
		if err != nil {
			return fmt.Errorf("web: the crawl to resume has a bad start address: %w", err)
		}
		site = u
	}
	c.site = hostKey(site)
	for i, st := range steps {
		if i > 0 && st.Start {
			return fmt.Errorf("web: the crawl to resume has a second start at step %d", i)
		}
		for _, k := range []string{st.URL, st.FinalURL} {
			if k != "" {
				c.seen[k], c.done[k] = true, true
			}
		}
		for _, l := range st.Links {
			u, err := parseTarget(l)
			if err != nil {
				return fmt.Errorf("web: the crawl to resume has a bad link at step %d: %w", i, err)
			}
			c.enqueue(u, st.Depth+1)
		}
		if !st.Start {
			c.requested++
		}
		if st.Visited {
			c.visited++
		}
	}
	c.queued = nil
	return nil
}

// isSitemapStart tells a sitemap from a page by the declared type, or by
// the path when the type says nothing.
func isSitemapStart(r *response) bool {
	mt := mediaType(r.resp.Header.Get("Content-Type"))
	switch {
	case isHTMLType(mt):
		return false
	case mt == "" || mt == "application/octet-stream":
		p := strings.ToLower(r.url.Path)
		return strings.HasSuffix(p, ".xml") || strings.HasSuffix(p, ".xml.gz")
	}
	return sitemapType(mt)
}

// page reads an answered page and queues its links unless nofollow or at
// MaxDepth. It returns the page's document, or nil when the page is
// noindex or has no text. Its error is ctx's; other failures are the
// start's error when start, else skip the page.
func (c *crawl) page(ctx context.Context, r *response, depth int, start bool) (*domain.Document, error) {
	defer r.close()
	body, err := c.f.readPage(ctx, r)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if start {
			return nil, err
		}
		c.skip(ctx, r.url, err)
		return nil, nil
	}
	meta := parsePage(body, r.url, c.f.agent)
	noindex, nofollow := headerRobots(r.resp.Header.Values("X-Robots-Tag"), c.f.agent)
	final := r.url.String()
	var doc *domain.Document
	if meta.noindex || noindex {
		c.f.log.DebugContext(ctx, "crawl: page is noindex", "url", final)
	} else if d, err := c.f.opts.Extract(body, final); err != nil {
		// An empty start page (a script-built landing page) is no reason
		// to give up: its links may lead to text.
		c.skip(ctx, r.url, err)
	} else {
		d.URL = final
		doc = &d
	}
	if meta.nofollow || nofollow || depth >= c.limits.MaxDepth {
		return doc, nil
	}
	for _, l := range meta.links {
		if hostKey(l) == c.site {
			c.enqueue(l, depth+1)
		}
	}
	return doc, nil
}

func (c *crawl) enqueue(u *url.URL, depth int) {
	k := u.String()
	if c.seen[k] || len(c.seen) >= maxQueued {
		return
	}
	c.seen[k] = true
	c.queue = append(c.queue, item{u: u, key: k, depth: depth})
	c.queued = append(c.queued, k)
}

func (c *crawl) skip(ctx context.Context, u *url.URL, err error) {
	c.f.log.DebugContext(ctx, "crawl: page skipped", "url", u.String(), "reason", err)
}

// sitemapEntries reads the start sitemap (closing r) and the sitemaps it
// lists, breadth-first, and returns the page URLs of the site they list,
// in order. Only the start failing is an error; nested sitemaps that fail
// are skipped.
func (c *crawl) sitemapEntries(ctx context.Context, r *response) ([]*url.URL, error) {
	sm, err := c.f.readSitemap(ctx, r)
	r.close()
	if err != nil {
		return nil, err
	}
	type file struct {
		u     *url.URL
		level int
	}
	var (
		pages   []*url.URL
		files   []file
		listed  = map[string]bool{r.url.String(): true}
		fetched = 1
	)
	add := func(sm *sitemap, level int) {
		for _, l := range sm.URLs {
			if len(pages) >= maxSitemapURLs {
				break
			}
			if u, ok := sitemapURL(l.Loc); ok && hostKey(u) == c.site && maybePage(u) {
				pages = append(pages, u)
			}
		}
		if level+1 >= maxSitemapLevels {
			return
		}
		for _, l := range sm.Sitemaps {
			if u, ok := sitemapURL(l.Loc); ok && hostKey(u) == c.site && !listed[u.String()] {
				listed[u.String()] = true
				files = append(files, file{u: u, level: level + 1})
			}
		}
	}
	add(sm, 0)
	pol := policy{c: c, robots: true}
	for len(files) > 0 && fetched < maxSitemapFiles && len(pages) < maxSitemapURLs {
		fl := files[0]
		files = files[1:]
		fetched++
		sm, err := c.readNestedSitemap(ctx, fl.u, pol)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			c.skip(ctx, fl.u, err)
			continue
		}
		add(sm, fl.level)
	}
	return pages, nil
}

func (c *crawl) readNestedSitemap(ctx context.Context, u *url.URL, pol policy) (*sitemap, error) {
	r, err := c.getPaced(ctx, u, acceptSitemap, pol)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.statusError(); err != nil {
		return nil, err
	}
	return c.f.readSitemap(ctx, r)
}

// sleep waits d, or less if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
