package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/temoto/robotstxt"

	"github.com/conciergehq/concierge/core/domain"
)

// maxRobotsBytes is how much of a robots.txt is read; RFC 9309 asks
// crawlers to parse at least 500 KiB and allows ignoring the rest.
const maxRobotsBytes = 512 << 10

// robotsRules are one origin's robots.txt rules for our agent.
type robotsRules struct {
	// group is the group for our agent, or "*"; nil allows everything.
	group *robotstxt.Group
	// err, when set, forbids crawling the origin: robots.txt could not be
	// read (5xx, 429, unreachable) or parsed.
	err error
}

func (r *robotsRules) allows(u *url.URL) error {
	if r.err != nil {
		return r.err
	}
	if r.group != nil && !r.group.Test(u.RequestURI()) {
		return domain.InvalidField("url", fmt.Sprintf("robots.txt of %s disallows %s", u.Host, u.RequestURI()))
	}
	return nil
}

// fetchRobots reads the robots.txt of u's origin. Following RFC 9309:
// a 4xx answer (404 above all) means there are no rules; a 5xx or 429
// answer, or no answer at all, means the site must not be crawled for now
// (ErrUnavailable, so the crawl can be retried later). We go further in one
// case, to be conservative: a robots.txt the parser rejects forbids
// crawling (ErrInvalidInput naming the file), since we cannot tell which of
// its rules we would break. A 2xx answer in HTML is taken for a "page not
// found" page served with the wrong status, and allows everything. The
// only error returned is the context's; the rest are kept in the rules.
func (c *crawl) fetchRobots(ctx context.Context, u *url.URL) (*robotsRules, error) {
	ru := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}
	r, err := c.f.get(ctx, ru, acceptRobots, policy{c: c, anyHost: true})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		var ve *domain.ValidationError
		if errors.As(err, &ve) {
			return &robotsRules{err: err}, nil
		}
		return &robotsRules{err: domain.Unavailable(fmt.Sprintf("robots.txt of %s could not be read, so the site is not crawled", u.Host), err)}, nil
	}
	defer r.close()
	code := r.resp.StatusCode
	switch {
	case code == 429 || code >= 500:
		return &robotsRules{err: fmt.Errorf("robots.txt of %s: the server answered %s, so the site is not crawled: %w",
			u.Host, statusText(code), domain.ErrUnavailable)}, nil
	case code < 200 || code >= 300:
		return &robotsRules{}, nil
	case isHTMLType(mediaType(r.resp.Header.Get("Content-Type"))):
		c.f.log.DebugContext(ctx, "robots.txt is an HTML page; taken as absent", "host", u.Host)
		return &robotsRules{}, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.resp.Body, maxRobotsBytes+1))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return &robotsRules{err: domain.Unavailable(fmt.Sprintf("robots.txt of %s could not be read, so the site is not crawled", u.Host), err)}, nil
	}
	if len(body) > maxRobotsBytes {
		// Drop the rest and the line cut in two.
		body = body[:maxRobotsBytes]
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 {
			body = body[:i+1]
		}
	}
	data, err := robotstxt.FromBytes(body)
	if err != nil {
		return &robotsRules{err: domain.InvalidField("url",
			fmt.Sprintf("robots.txt of %s could not be parsed, so the site is not crawled; fix or remove it", u.Host))}, nil
	}
	// FindGroup picks the group whose agent is the longest prefix of ours
	// ("conciergebot"), falling back to "*".
	return &robotsRules{group: data.FindGroup(c.f.agent)}, nil
}
