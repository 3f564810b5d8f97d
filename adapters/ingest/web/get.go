package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Accept headers: what each kind of request hopes to receive.
const (
	acceptHTML    = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"
	acceptSitemap = "application/xml,text/xml;q=0.9,*/*;q=0.1"
	acceptStart   = "text/html,application/xhtml+xml,application/xml;q=0.9,text/xml;q=0.9,*/*;q=0.1"
	acceptRobots  = "text/plain,*/*;q=0.1"
)

// hopPolicy is consulted around every request get makes, redirects
// included: the crawler uses it to keep to one site, obey robots.txt and
// pace requests. Fetch uses none.
type hopPolicy interface {
	// before may refuse u or wait before it is requested.
	before(ctx context.Context, u *url.URL) error
	// after is called once the request to u has answered or failed.
	after(u *url.URL)
}

// response is a final (non-redirect) answer whose body is still open; its
// context bounds reading the body by the per-request timeout.
type response struct {
	url    *url.URL
	resp   *http.Response
	cancel context.CancelFunc
}

func (r *response) close() {
	_ = r.resp.Body.Close()
	r.cancel()
}

// get requests u, following redirects by hand: every hop is checked for
// scheme, user info and refused hosts (the dial itself checks the resolved
// address), passed through policy, and counted against MaxRedirects. It
// returns the first answer that is not a redirect, whatever its status.
func (f *Fetcher) get(ctx context.Context, u *url.URL, accept string, policy hopPolicy) (*response, error) {
	for hops := 0; ; hops++ {
		if err := f.guard.CheckURL(u); err != nil {
			return nil, err
		}
		if policy != nil {
			if err := policy.before(ctx, u); err != nil {
				return nil, err
			}
		}
		rctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, u.String(), nil)
		if err != nil {
			cancel()
			return nil, domain.InvalidField("url", "is not a valid URL")
		}
		req.Header.Set("User-Agent", f.opts.UserAgent)
		req.Header.Set("Accept", accept)
		resp, err := f.client.Do(req)
		if policy != nil {
			policy.after(u)
		}
		if err != nil {
			cancel()
			return nil, f.requestError(ctx, u, err)
		}
		loc := resp.Header.Get("Location")
		if !isRedirect(resp.StatusCode) || loc == "" {
			return &response{url: u, resp: resp, cancel: cancel}, nil
		}
		// Drain a little so the connection can be reused, then let it go.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		_ = resp.Body.Close()
		cancel()
		if hops >= f.opts.MaxRedirects {
			return nil, domain.InvalidField("url", fmt.Sprintf("stopped after %d redirects", f.opts.MaxRedirects))
		}
		next, err := u.Parse(strings.TrimSpace(loc))
		if err != nil {
			return nil, domain.InvalidField("url", "the server redirected to a malformed address")
		}
		if u, err = normalizeTarget(next); err != nil {
			return nil, err
		}
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// requestError gives a failed request its kind: a guard refusal stays a
// ValidationError, the caller's cancellation stays the context's error, and
// anything else (timeouts, refused connections, TLS, resets) is
// ErrUnavailable, worth retrying.
func (f *Fetcher) requestError(ctx context.Context, u *url.URL, err error) error {
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return domain.Unavailable(fmt.Sprintf("fetch %s: no answer within %s", u, f.opts.Timeout), err)
	}
	return domain.Unavailable("fetch "+u.String(), err)
}

// statusError turns a non-2xx answer into an error: 4xx means the page is
// missing or forbidden, which retrying will not change (ErrInvalidInput);
// 429 and 5xx are worth retrying (ErrUnavailable). The server's own reason
// phrase and body are never quoted.
func (r *response) statusError() error {
	code := r.resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusTooManyRequests || code >= 500:
		return fmt.Errorf("fetch %s: the server answered %s: %w", r.url, statusText(code), domain.ErrUnavailable)
	default:
		return domain.InvalidField("url", "the server answered "+statusText(code))
	}
}

func statusText(code int) string {
	return strings.TrimSpace(strconv.Itoa(code) + " " + http.StatusText(code))
}

// retryAfter reads a Retry-After header (seconds or an HTTP date); zero
// when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// mediaType is the lowercased media type of a Content-Type header, "" when
// absent or unreadable (the body is sniffed then).
func mediaType(header string) string {
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		return ""
	}
	return mt
}

func isHTMLType(mt string) bool { return mt == "text/html" || mt == "application/xhtml+xml" }

// describeType names a media type for an error message; it comes from
// mime.ParseMediaType, so it is a short token, but cap it anyway.
func describeType(mt string) string {
	if len(mt) > 64 {
		mt = mt[:64]
	}
	return mt
}

// readPage reads an HTML page's body within MaxBodyBytes. Declared types
// other than HTML and XHTML are refused before reading; an undeclared (or
// octet-stream) type is sniffed.
func (f *Fetcher) readPage(ctx context.Context, r *response) ([]byte, error) {
	mt := mediaType(r.resp.Header.Get("Content-Type"))
	sniff := mt == "" || mt == "application/octet-stream"
	if !sniff && !isHTMLType(mt) {
		return nil, domain.InvalidField("url", fmt.Sprintf("the page is %s, not HTML", describeType(mt)))
	}
	body, err := f.readBody(ctx, r, f.opts.MaxBodyBytes, "page")
	if err != nil {
		return nil, err
	}
	if sniff && !strings.HasPrefix(http.DetectContentType(body), "text/html") {
		return nil, domain.InvalidField("url", "the page is not HTML")
	}
	return body, nil
}

// readBody reads at most limit bytes of r's body; a longer body is an
// ErrInvalidInput naming the limit, refused from Content-Length when the
// server declares it.
func (f *Fetcher) readBody(ctx context.Context, r *response, limit int64, what string) ([]byte, error) {
	if r.resp.ContentLength > limit {
		return nil, tooLarge(what, limit)
	}
	body, err := io.ReadAll(io.LimitReader(r.resp.Body, limit+1))
	if err != nil {
		return nil, f.requestError(ctx, r.url, err)
	}
	if int64(len(body)) > limit {
		return nil, tooLarge(what, limit)
	}
	return body, nil
}

func tooLarge(what string, limit int64) error {
	return domain.InvalidField("url", fmt.Sprintf("%s is larger than %s", what, formatSize(limit)))
}

// formatSize writes a byte count the way limits are usually written.
func formatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// errTooLarge is returned by capReader past its limit.
var errTooLarge = errors.New("body exceeds its size limit")

// capReader reads at most left bytes and then fails with errTooLarge if
// more remain, unlike io.LimitReader, which would end silently and let a
// truncated document parse. It remembers the first error of the reader
// beneath it, so a network failure can be told from a parse failure.
type capReader struct {
	r    io.Reader
	left int64
	err  error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var probe [1]byte
		n, err := c.r.Read(probe[:])
		if n > 0 {
			c.err = errTooLarge
			return 0, errTooLarge
		}
		c.note(err)
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.note(err)
	return n, err
}

func (c *capReader) note(err error) {
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
}
