package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/bodylimit"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/workspace"
	"github.com/conciergehq/concierge/ports"
)

const headerRequestID = "X-Request-Id"

type requestIDKey struct{}

// withRequestID gives every request an id (the caller's, when it is safe to
// echo) and a context.Context derived from the base context, so use cases are
// cancelled when the server shuts down.
func withRequestID(base context.Context) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id := c.Get(headerRequestID)
		if !safeRequestID(id) {
			id = domain.NewID("req_")
		} else {
			id = strings.Clone(id) // fasthttp reuses header memory after the handler
		}
		c.Locals(requestIDKey{}, id)
		c.Set(headerRequestID, id)
		c.SetUserContext(base)
		return c.Next()
	}
}

func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals(requestIDKey{}).(string)
	return id
}

func safeRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
			return false
		}
	}
	return true
}

// recoverPanics turns a handler panic into a logged 500 instead of a dead process.
func recoverPanics(log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(c.UserContext(), "handler panicked", "requestId", requestID(c), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return c.Next()
	}
}

// accessLog logs one line per request after the response is ready. It reads
// nothing of the body, so streaming responses are not buffered.
func accessLog(log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		if err != nil {
			// Let the ErrorHandler write the response now so the status is logged.
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		log.LogAttrs(c.UserContext(), slog.LevelInfo, "request",
			slog.String("requestId", requestID(c)),
			slog.String("method", c.Method()),
			slog.String("path", c.Path()),
			slog.Int("status", c.Response().StatusCode()),
			slog.Duration("duration", time.Since(start)),
		)
		return nil
	}
}

// limits is how many calls a minute each kind of caller gets.
type limits struct {
	APIPerMinute            int
	WebhookPerMinute        int
	PublicPerMinute         int
	WidgetSessionsPerMinute int
}

// rateLimiter applies a per-key limit and always sets the documented headers.
type rateLimiter struct {
	limiter ports.RateLimiter
}

func (r rateLimiter) take(c *fiber.Ctx, key string, perMinute int) error {
	if perMinute <= 0 {
		return nil
	}
	res, err := r.limiter.Allow(c.UserContext(), key, perMinute)
	if err != nil {
		return err
	}
	c.Set("X-RateLimit-Limit", strconv.Itoa(res.Limit))
	c.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	c.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(res.ResetAfter)))
	if !res.Allowed {
		return &domain.RateLimitError{RetryAfterSeconds: max(1, ceilSeconds(res.RetryAfter))}
	}
	return nil
}

// failedAuth counts a refused credential against the client IP.
func (r rateLimiter) failedAuth(c *fiber.Ctx, lim limits) error {
	return r.take(c, "authfail:"+c.IP(), lim.PublicPerMinute)
}

func ceilSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

// requireAPIKey authenticates `Authorization: Bearer <key>`, checks apiAccess
// and counts the call against the key's rate limit. Failed attempts count
// against the client IP, which slows down key guessing.
func requireAPIKey(ws *workspace.Service, rl rateLimiter, lim limits) fiber.Handler {
	return func(c *fiber.Ctx) error {
		secret, ok := bearer(c.Get(fiber.HeaderAuthorization))
		if !ok {
			if err := rl.failedAuth(c, lim); err != nil {
				return err
			}
			return domain.Unauthorized("missing API key: send Authorization: Bearer <API_KEY>")
		}
		p, err := ws.AuthenticateAPIKey(c.UserContext(), secret)
		if err != nil {
			if errors.Is(err, domain.ErrUnauthorized) {
				if rerr := rl.failedAuth(c, lim); rerr != nil {
					return rerr
				}
			}
			return err
		}
		if err := rl.take(c, "key:"+p.KeyID, lim.APIPerMinute); err != nil {
			return err
		}
		wire.SetPrincipal(c, p)
		return c.Next()
	}
}

func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return strings.Clone(token), token != ""
}

// Body limits besides the configured JSON one: an upload is the largest
// file a source may have plus room for the form's other parts; a route that
// takes no body gets a few KiB (room for a client that sends one anyway).
const (
	uploadLimitBytes = domain.MaxSourceFileBytes + 64<<10
	otherLimitBytes  = 4 << 10
)

// bodyClass tells a request's body limit from its method, path and
// Content-Type, before routing: API writes take JSON, except a multipart
// POST to an agent's sources (a file upload); everything else takes no
// body. The path is compared as the router does (case-insensitively, one
// trailing slash ignored).
func bodyClass(c *fiber.Ctx) bodylimit.Class {
	path := strings.ToLower(c.Path())
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	if c.Method() == fiber.MethodPost && isConsoleUploadPath(path) && wire.IsMultipart(c) {
		// Knowledge: the console's file uploads stream like the API's.
		return bodylimit.Upload
	}
	if strings.HasPrefix(path, "/console/") && c.Method() == fiber.MethodPost {
		// The console's forms (an agent's prompt alone may be 80 KB of
		// UTF-8) get the JSON limit.
		return bodylimit.JSON
	}
	if !strings.HasPrefix(path, "/api/") {
		return bodylimit.Other
	}
	switch c.Method() {
	case fiber.MethodPost:
		if isSourcesPath(path) && wire.IsMultipart(c) {
			return bodylimit.Upload
		}
		return bodylimit.JSON
	case fiber.MethodPut, fiber.MethodPatch:
		return bodylimit.JSON
	}
	return bodylimit.Other
}

// isSourcesPath matches /api/v2/agents/{slug}/sources.
func isSourcesPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/api/v2/agents/")
	if !ok {
		return false
	}
	slug, tail, ok := strings.Cut(rest, "/")
	return ok && slug != "" && tail == "sources"
}

// isConsoleUploadPath matches /console/w/{workspaceID}/agents/{slug}/knowledge/files.
func isConsoleUploadPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/console/w/")
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	return len(parts) == 5 && parts[0] != "" && parts[1] == "agents" && parts[2] != "" &&
		parts[3] == "knowledge" && parts[4] == "files"
}

// limitPerIP counts keyless calls against the client IP, in the named
// bucket: the session routes share one ("ip"); the widget's new sessions
// have a tighter one of their own ("widget"), as each is a stored
// conversation.
func limitPerIP(rl rateLimiter, bucket string, perMinute int) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := rl.take(c, bucket+":"+c.IP(), perMinute); err != nil {
			return err
		}
		return c.Next()
	}
}
