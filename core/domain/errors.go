// Package domain holds Concierge's entities, value objects, plan features and
// error kinds. It imports nothing of ours and no infrastructure, so every other
// layer can depend on it.
package domain

import (
	"errors"
	"fmt"
)

// Error kinds. Every error that leaves the core wraps exactly one of these, so
// each edge (HTTP, asynq) maps kinds to its own vocabulary in one place.
var (
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrInvalidInput = errors.New("invalid input")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrRateLimited  = errors.New("rate limited")
	ErrUnavailable  = errors.New("unavailable")
)

// ValidationError is an ErrInvalidInput with a message meant for the caller and,
// optionally, per-field reasons keyed by the field's wire name.
type ValidationError struct {
	Message string
	Fields  map[string]string
}

func (e *ValidationError) Error() string { return e.Message }

// Unwrap makes errors.Is(err, ErrInvalidInput) true.
func (e *ValidationError) Unwrap() error { return ErrInvalidInput }

// Invalid returns a ValidationError with the given caller-facing message.
func Invalid(format string, args ...any) error {
	return &ValidationError{Message: fmt.Sprintf(format, args...)}
}

// InvalidField returns a ValidationError naming one field.
func InvalidField(field, reason string) error {
	return &ValidationError{Message: field + ": " + reason, Fields: map[string]string{field: reason}}
}

// PlanError says the workspace's plan lacks a feature. It is an ErrForbidden.
type PlanError struct {
	Feature Feature
	Plan    Plan
}

func (e *PlanError) Error() string {
	return fmt.Sprintf("the %s plan does not include %s; upgrade to %s or above", e.Plan, e.Feature, MinimumPlanFor(e.Feature))
}

// Unwrap makes errors.Is(err, ErrForbidden) true.
func (e *PlanError) Unwrap() error { return ErrForbidden }

// NotFoundError names what was not found. Unknown objects and objects of another
// workspace give the same error, so callers cannot probe other tenants.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What + " not found" }

// Unwrap makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// NotFound returns a NotFoundError for the named kind of object.
func NotFound(what string) error { return &NotFoundError{What: what} }

// ConflictError explains a conflict to the caller; Details, when set, name
// what conflicts (for a refused state change: from and to).
type ConflictError struct {
	Message string
	Details map[string]string
}

func (e *ConflictError) Error() string { return e.Message }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// ErrStatusChanged says a conversation was no longer in the state a write
// was decided under, so nothing was written: the caller reads it again and
// decides again. It is an ErrConflict, so should it ever reach an edge it is
// a retryable 409, never a 500.
var ErrStatusChanged = &ConflictError{Message: "the conversation changed while this request ran; retry"}

// ErrMessageExists says a message was stored before (an inbound event's,
// by an earlier run of its task), so the write that would have stored it
// again, and anything that depended on it, did nothing.
var ErrMessageExists = &ConflictError{Message: "the message is already stored"}

// ErrAnswerInProgress says a request with this Idempotency-Key is being
// answered right now; a retry once it is done gets the answer.
var ErrAnswerInProgress = &ConflictError{Message: "a request with this Idempotency-Key is still being answered; retry in a few seconds"}

// Conflict returns a ConflictError with the given message.
func Conflict(format string, args ...any) error {
	return &ConflictError{Message: fmt.Sprintf(format, args...)}
}

// UnauthorizedError explains why credentials were refused, without echoing them.
type UnauthorizedError struct{ Message string }

func (e *UnauthorizedError) Error() string { return e.Message }

// Unwrap makes errors.Is(err, ErrUnauthorized) true.
func (e *UnauthorizedError) Unwrap() error { return ErrUnauthorized }

// Unauthorized returns an UnauthorizedError with the given message.
func Unauthorized(msg string) error { return &UnauthorizedError{Message: msg} }

// RateLimitError carries when the caller may retry.
type RateLimitError struct {
	RetryAfterSeconds int
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limit exceeded; retry in %d seconds", e.RetryAfterSeconds)
}

// Unwrap makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

// Unavailable wraps a dependency failure as ErrUnavailable, keeping the cause in
// the chain for logs while callers only see the kind.
func Unavailable(what string, cause error) error {
	return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, cause)
}

// Error codes, as PRODUCT.md names them for every surface: HTTP error
// bodies, stream error events and the event bus.
const (
	CodeValidation   = "VALIDATION_ERROR"
	CodeUnauthorized = "UNAUTHORIZED"
	CodePlanUpgrade  = "PLAN_UPGRADE_REQUIRED"
	CodeNotFound     = "NOT_FOUND"
	CodeConflict     = "CONFLICT"
	CodeRateLimited  = "RATE_LIMITED"
	CodeUnavailable  = "UNAVAILABLE"
	CodeInternal     = "INTERNAL"
)

// ErrorCode is the one mapping of error kinds to codes. Errors of no kind
// are CodeInternal: their text is never shown.
func ErrorCode(err error) string {
	switch {
	case errors.Is(err, ErrInvalidInput):
		return CodeValidation
	case errors.Is(err, ErrUnauthorized):
		return CodeUnauthorized
	case errors.Is(err, ErrForbidden):
		return CodePlanUpgrade
	case errors.Is(err, ErrNotFound):
		return CodeNotFound
	case errors.Is(err, ErrConflict):
		return CodeConflict
	case errors.Is(err, ErrRateLimited):
		return CodeRateLimited
	case errors.Is(err, ErrUnavailable):
		return CodeUnavailable
	}
	return CodeInternal
}
