package httpapi

import (
	"errors"
	"log/slog"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

// errorBody is the one error shape of v1, v2 and the webhook.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Details map[string]string `json:"details,omitempty"`
}

// errorHandler is the only place that turns errors into HTTP responses.
// Handlers just return errors; unknown ones become 500 INTERNAL and are logged
// with their full chain, never shown.
func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		status, body := describeError(err)
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
		return c.Status(status).JSON(body)
	}
}

func describeError(err error) (int, errorBody) {
	var (
		verr *domain.ValidationError
		perr *domain.PlanError
		nf   *domain.NotFoundError
		cf   *domain.ConflictError
		un   *domain.UnauthorizedError
		ferr *fiber.Error
	)
	switch {
	case errors.As(err, &verr):
		return fiber.StatusBadRequest, newBody("VALIDATION_ERROR", verr.Message, verr.Fields)
	case errors.Is(err, domain.ErrInvalidInput):
		return fiber.StatusBadRequest, newBody("VALIDATION_ERROR", "invalid request", nil)
	case errors.As(err, &un):
		return fiber.StatusUnauthorized, newBody("UNAUTHORIZED", un.Message, nil)
	case errors.Is(err, domain.ErrUnauthorized):
		return fiber.StatusUnauthorized, newBody("UNAUTHORIZED", "unauthorized", nil)
	case errors.As(err, &perr):
		return fiber.StatusForbidden, newBody("PLAN_UPGRADE_REQUIRED", perr.Error(),
			map[string]string{"feature": string(perr.Feature), "plan": string(perr.Plan), "requiredPlan": string(domain.MinimumPlanFor(perr.Feature))})
	case errors.Is(err, domain.ErrForbidden):
		return fiber.StatusForbidden, newBody("PLAN_UPGRADE_REQUIRED", "your plan does not include this feature", nil)
	case errors.As(err, &nf):
		return fiber.StatusNotFound, newBody("NOT_FOUND", nf.Error(), nil)
	case errors.Is(err, domain.ErrNotFound):
		return fiber.StatusNotFound, newBody("NOT_FOUND", "not found", nil)
	case errors.As(err, &cf):
		return fiber.StatusConflict, newBody("CONFLICT", cf.Message, nil)
	case errors.Is(err, domain.ErrConflict):
		return fiber.StatusConflict, newBody("CONFLICT", "conflict", nil)
	case errors.Is(err, domain.ErrRateLimited):
		return fiber.StatusTooManyRequests, newBody("RATE_LIMITED", err.Error(), nil)
	case errors.Is(err, domain.ErrUnavailable):
		return fiber.StatusServiceUnavailable, newBody("UNAVAILABLE", "a dependency is unavailable; retry later", nil)
	case errors.As(err, &ferr):
		return fiberError(ferr)
	default:
		return fiber.StatusInternalServerError, newBody("INTERNAL", "internal error", nil)
	}
}

// fiberError covers errors raised by fiber itself (routing, body limit).
func fiberError(e *fiber.Error) (int, errorBody) {
	switch e.Code {
	case fiber.StatusNotFound:
		return e.Code, newBody("NOT_FOUND", "no such route", nil)
	case fiber.StatusMethodNotAllowed:
		return e.Code, newBody("METHOD_NOT_ALLOWED", "method not allowed on this path", nil)
	case fiber.StatusRequestEntityTooLarge:
		return e.Code, newBody("PAYLOAD_TOO_LARGE", "request body is too large", nil)
	case fiber.StatusUnsupportedMediaType:
		return e.Code, newBody("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json", nil)
	}
	if e.Code >= 500 {
		return fiber.StatusInternalServerError, newBody("INTERNAL", "internal error", nil)
	}
	// Anything else fiber refuses (malformed request line, oversized headers)
	// is the caller's malformed request.
	return fiber.StatusBadRequest, newBody("VALIDATION_ERROR", "malformed request", nil)
}

func newBody(code, message string, details map[string]string) errorBody {
	return errorBody{Error: errorDetail{Code: code, Message: message, Details: details}}
}
