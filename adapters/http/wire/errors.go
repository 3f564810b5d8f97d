package wire

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

// ErrorBody is the one error shape of v1, v2 and the webhook.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of ErrorBody.
type ErrorDetail struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Details map[string]string `json:"details,omitempty"`
}

// DescribeError maps an error to its HTTP status and the documented error
// body. It is the one mapping of error kinds for the HTTP edge: the fiber
// ErrorHandler uses it for responses, streams for their error events. Unknown
// errors become 500 INTERNAL without their text.
func DescribeError(err error) (int, ErrorBody) {
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
func fiberError(e *fiber.Error) (int, ErrorBody) {
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

func newBody(code, message string, details map[string]string) ErrorBody {
	return ErrorBody{Error: ErrorDetail{Code: code, Message: message, Details: details}}
}
