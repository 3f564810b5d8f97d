package wire

import (
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

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

// statusOf is the HTTP status of each error code.
var statusOf = map[string]int{
	domain.CodeValidation:   fiber.StatusBadRequest,
	domain.CodeUnauthorized: fiber.StatusUnauthorized,
	domain.CodePlanUpgrade:  fiber.StatusForbidden,
	domain.CodeNotFound:     fiber.StatusNotFound,
	domain.CodeConflict:     fiber.StatusConflict,
	domain.CodeRateLimited:  fiber.StatusTooManyRequests,
	domain.CodeUnavailable:  fiber.StatusServiceUnavailable,
}

// DescribeError maps an error to its HTTP status and the documented error
// body. The code comes from domain.ErrorCode; this adds the status and the
// public message. The fiber ErrorHandler uses it for responses, streams for
// their error events. Unknown errors become 500 INTERNAL without their text.
func DescribeError(err error) (int, ErrorBody) {
	code := domain.ErrorCode(err)
	if code == domain.CodeInternal {
		var ferr *fiber.Error
		if errors.As(err, &ferr) {
			return fiberError(ferr)
		}
		return fiber.StatusInternalServerError, newBody(code, "internal error", nil)
	}
	message, details := publicMessage(err, code)
	return statusOf[code], newBody(code, message, details)
}

// publicMessage is the text a caller may see: the message of a typed domain
// error, or a generic one for a bare kind.
func publicMessage(err error, code string) (string, map[string]string) {
	var (
		verr *domain.ValidationError
		perr *domain.PlanError
		nf   *domain.NotFoundError
		cf   *domain.ConflictError
		un   *domain.UnauthorizedError
		fb   *domain.ForbiddenError
	)
	switch {
	case errors.As(err, &verr):
		return verr.Message, verr.Fields
	case errors.As(err, &un):
		return un.Message, nil
	case errors.As(err, &fb):
		return fb.Reason, nil
	case errors.As(err, &perr):
		return perr.Error(), map[string]string{"feature": string(perr.Feature), "plan": string(perr.Plan), "requiredPlan": string(domain.MinimumPlanFor(perr.Feature))}
	case errors.As(err, &nf):
		return nf.Error(), nil
	case errors.As(err, &cf):
		return cf.Message, cf.Details
	case code == domain.CodeRateLimited:
		return err.Error(), nil
	}
	return genericMessage[code], nil
}

var genericMessage = map[string]string{
	domain.CodeValidation:   "invalid request",
	domain.CodeUnauthorized: "unauthorized",
	domain.CodePlanUpgrade:  "your plan does not include this feature",
	domain.CodeNotFound:     "not found",
	domain.CodeConflict:     "conflict",
	domain.CodeUnavailable:  "a dependency is unavailable; retry later",
}

// fiberError covers errors raised by fiber itself (routing, body limit).
func fiberError(e *fiber.Error) (int, ErrorBody) {
	switch e.Code {
	case fiber.StatusNotFound:
		return e.Code, newBody(domain.CodeNotFound, "no such route", nil)
	case fiber.StatusMethodNotAllowed:
		return e.Code, newBody("METHOD_NOT_ALLOWED", "method not allowed on this path", nil)
	case fiber.StatusRequestEntityTooLarge:
		return e.Code, newBody("PAYLOAD_TOO_LARGE", "request body is too large", nil)
	case fiber.StatusUnsupportedMediaType:
		// Ours say what was refused (the type, or a compression); fiber's
		// own says only the status's name.
		msg := e.Message
		if msg == "" || msg == utils.StatusMessage(e.Code) {
			msg = contentTypeRefusal
		}
		return e.Code, newBody("UNSUPPORTED_MEDIA_TYPE", msg, nil)
	}
	if e.Code >= 500 {
		return fiber.StatusInternalServerError, newBody(domain.CodeInternal, "internal error", nil)
	}
	// Anything else fiber refuses (malformed request line, oversized headers)
	// is the caller's malformed request.
	return fiber.StatusBadRequest, newBody(domain.CodeValidation, "malformed request", nil)
}

func newBody(code, message string, details map[string]string) ErrorBody {
	return ErrorBody{Error: ErrorDetail{Code: code, Message: message, Details: details}}
}

// PageRenderer writes an error as a page instead of the JSON body: the
// console's, which people read in a browser.
type PageRenderer func(c *fiber.Ctx, status int, body ErrorBody) error

type pageRendererKey struct{}

// SetErrorPage makes the ErrorHandler answer this request's errors with r,
// after it has mapped and logged them as for every other request.
func SetErrorPage(c *fiber.Ctx, r PageRenderer) { c.Locals(pageRendererKey{}, r) }

// ErrorPage returns the renderer SetErrorPage set for the request.
func ErrorPage(c *fiber.Ctx) (PageRenderer, bool) {
	r, ok := c.Locals(pageRendererKey{}).(PageRenderer)
	return r, ok && r != nil
}
