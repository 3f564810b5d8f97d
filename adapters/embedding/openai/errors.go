package openai

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"

	"github.com/conciergehq/concierge/core/domain"
)

// providerError is a failed embeddings request. Its message is ours alone:
// what the provider said is kept in detail, which only LogValue shows,
// because provider text can echo inputs, key fragments or internal names.
type providerError struct {
	kind     error // a domain kind, *domain.RateLimitError or *domain.ValidationError
	what     string
	status   int // the provider's HTTP status; 0 if none
	attempts int
	detail   string // provider text, redacted and truncated
	cause    error
	logCause string // cause.Error(), redacted and truncated
}

func (e *providerError) Error() string {
	msg := "openai embeddings: " + e.what
	if e.status != 0 {
		msg += " (HTTP " + strconv.Itoa(e.status) + ")"
	}
	return msg
}

// Unwrap exposes the kind for errors.Is/As and the cause for logs.
func (e *providerError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// LogValue adds the provider's own words for operators, never for users.
func (e *providerError) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("msg", e.Error()), slog.Int("attempts", e.attempts)}
	if e.detail != "" {
		attrs = append(attrs, slog.String("provider", e.detail))
	}
	if e.logCause != "" {
		attrs = append(attrs, slog.String("cause", e.logCause))
	}
	return slog.GroupValue(attrs...)
}

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
	return &providerError{kind: kind, what: what, status: f.status, attempts: attempts, detail: f.detail, cause: f.cause, logCause: f.logCause}
}

// classify decides what an attempt's error means and whether another attempt
// may help. res is the HTTP response when one arrived.
func classify(err error, res *http.Response, apiKey string) failure {
	var f failure
	var apiErr *oai.Error
	switch {
	case errors.As(err, &apiErr):
		f = byStatus(apiErr.StatusCode, apiErr.Code)
		f.detail = redact(joinDetail(apiErr.Type, apiErr.Code, apiErr.Message), apiKey)
		f.retryAfter = retryAfter(apiErr.Response)
	case res != nil && res.StatusCode >= 400:
		// The body was not OpenAI's error shape (a proxy's HTML page, a
		// server's own JSON): the status is all we trust.
		f = byStatus(res.StatusCode, "")
		f.retryAfter = retryAfter(res)
	case res != nil:
		// A success status with a body the SDK could not read: cut short
		// by a proxy, or not JSON at all.
		f = failure{kind: domain.ErrUnavailable, what: "embedding provider sent an unreadable answer", retryable: true}
	default:
		// Connection refused or reset, TLS, DNS.
		f = failure{kind: domain.ErrUnavailable, what: "embedding provider connection failed", retryable: true}
	}
	f.cause = err
	f.logCause = redact(err.Error(), apiKey)
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
	return &providerError{
		kind:     domain.ErrUnavailable,
		what:     fmt.Sprintf("embedding provider did not answer in time (%d attempts)", attempts),
		attempts: attempts,
		cause:    cause,
		logCause: redact(cause.Error(), apiKey),
	}
}

// retryAfter reads the provider's requested wait: Retry-After-Ms, then
// Retry-After in seconds or as an HTTP date.
func retryAfter(res *http.Response) time.Duration {
	if res == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(res.Header.Get("Retry-After-Ms"), 64); err == nil && ms > 0 && ms < 1e9 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := res.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

const maxDetail = 300

func joinDetail(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ": ")
}

// redact keeps the detail short and free of our own key, should a provider
// echo it.
func redact(s, apiKey string) string {
	if apiKey != "" {
		s = strings.ReplaceAll(s, apiKey, "[redacted]")
	}
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "..."
	}
	return s
}
