package httpapi

import (
	"errors"
	"log/slog"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
)

// ErrorHandler is the only place that turns errors into HTTP responses.
// Handlers just return errors; unknown ones become 500 INTERNAL and are logged
// with their full chain, never shown. New installs it; it is exported so the
// handler packages' tests (httpapitest) answer through the same mapping.
func ErrorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		status, body := wire.DescribeError(err)
		if requestID(c) == "" {
			// fasthttp refused the request (body too large, malformed) before
			// any middleware ran; still give the caller an id to quote.
			id := domain.NewID("req_")
			c.Locals(requestIDKey{}, id)
			c.Set(headerRequestID, id)
		}
		if status >= 500 {
			log.ErrorContext(c.UserContext(), "request failed",
				"requestId", requestID(c), "method", c.Method(), "path", c.Path(), "status", status, "error", err.Error())
		}
		var rl *domain.RateLimitError
		if errors.As(err, &rl) {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(rl.RetryAfterSeconds))
		}
		if status == fiber.StatusServiceUnavailable {
			c.Set(fiber.HeaderRetryAfter, "5")
		}
		if render, ok := wire.ErrorPage(c); ok {
			// The console shows the same status and message as a page.
			return render(c, status, body)
		}
		return c.Status(status).JSON(body)
	}
}
