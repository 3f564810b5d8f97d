package openai

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	oai "github.com/openai/openai-go/v3"

	"github.com/conciergehq/concierge/adapters/openaicompat"
	"github.com/conciergehq/concierge/core/domain"
)

// service names this adapter in its errors' messages.
const service = "openai embeddings"

// refusedInput is what callers see when the provider refuses a text: the
// provider's own reason stays in the log.
const refusedInput = "the embedding provider refused the text (too long, or not accepted)"

// failure is a classified attempt error.
type failure struct {
	status     int
	kind       error
	what       string
	retryable  bool
	operator   bool // our configuration is wrong: worth an error log line
	retryAfter time.Duration
	detail     string
	cause      error
	logCause   string
}

func (f failure) toError(attempts int) error {
	kind := f.kind
	switch {
	case errors.Is(kind, domain.ErrRateLimited) && f.retryAfter > 0:
		kind = &domain.RateLimitError{RetryAfterSeconds: int(math.Ceil(f.retryAfter.Seconds()))}
	case errors.Is(kind, domain.ErrInvalidInput):
		kind = &domain.ValidationError{Message: refusedInput}
	}
	what := f.what
	if attempts > 1 {
		what += fmt.Sprintf(" after %d attempts", attempts)
	}
	return &openaicompat.ProviderError{Service: service, Kind: kind, What: what, Status: f.status, Attempts: attempts, Detail: f.detail, Cause: f.cause, LogCause: f.logCause}
}

// classify decides what an attempt's error means and whether another attempt
// may help. res is the HTTP response when one arrived.
func classify(err error, res *http.Response, apiKey string) failure {
	var f failure
	var apiErr *oai.Error
	switch {
	case errors.As(err, &apiErr):
		f = byStatus(apiErr.StatusCode, apiErr.Code)
		f.detail = openaicompat.Redact(openaicompat.JoinDetail(apiErr.Type, apiErr.Code, apiErr.Message), apiKey)
		f.retryAfter = openaicompat.RetryAfter(apiErr.Response)
	case res != nil && res.StatusCode >= 400:
		// The body was not OpenAI's error shape (a proxy's HTML page, a
		// server's own JSON): the status is all we trust.
		f = byStatus(res.StatusCode, "")
		f.retryAfter = openaicompat.RetryAfter(res)
	case res != nil:
		// A success status with a body the SDK could not read: cut short
		// by a proxy, or not JSON at all.
		f = failure{kind: domain.ErrUnavailable, what: "embedding provider sent an unreadable answer", retryable: true}
	default:
		// Connection refused or reset, TLS, DNS.
		f = failure{kind: domain.ErrUnavailable, what: "embedding provider connection failed", retryable: true}
	}
	f.cause = err
	f.logCause = openaicompat.Redact(err.Error(), apiKey)
	return f
}

// byStatus maps a provider status to a kind.
func byStatus(status int, code string) failure {
	switch {
	case status == http.StatusTooManyRequests && code == "insufficient_quota":
		// Billing, not throttling: waiting does not help and users cannot fix it.
		return failure{status: status, kind: domain.ErrUnavailable, what: "embedding provider quota exhausted", operator: true}
	case status == http.StatusTooManyRequests:
		return failure{status: status, kind: domain.ErrRateLimited, what: "embedding provider rate limit reached", retryable: true}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return failure{status: status, kind: domain.ErrUnavailable, what: "embedding provider rejected our credentials", operator: true}
	case status == http.StatusNotFound:
		// An unknown model, or a base URL without an embeddings endpoint.
		return failure{status: status, kind: domain.ErrUnavailable, what: "embedding provider does not know the model or the endpoint", operator: true}
	case status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity:
		return failure{status: status, kind: domain.ErrInvalidInput, what: "embedding provider refused the input"}
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		return failure{status: status, kind: domain.ErrUnavailable, what: "embedding provider failed", retryable: true}
	default:
		return failure{status: status, kind: domain.ErrUnavailable, what: "embedding provider answered unexpectedly"}
	}
}

func timeoutError(attempts int, cause error, apiKey string) error {
	return &openaicompat.ProviderError{
		Service:  service,
		Kind:     domain.ErrUnavailable,
		What:     fmt.Sprintf("embedding provider did not answer in time (%d attempts)", attempts),
		Attempts: attempts,
		Cause:    cause,
		LogCause: openaicompat.Redact(cause.Error(), apiKey),
	}
}
