package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/conciergehq/concierge/core/domain"
)

// providerError is a failed model call. Its message is ours alone: what the
// provider said is kept in detail, which only LogValue shows, because provider
// text can echo prompts, key fragments or internal names.
type providerError struct {
	kind     error // a domain kind, or a *domain.RateLimitError
	what     string
	status   int // the provider's HTTP or in-stream status; 0 if none
	attempts int
	detail   string // provider text, redacted and truncated
	cause    error
	logCause string // cause.Error(), redacted and truncated
}

func (e *providerError) Error() string {
	msg := "openai: " + e.what
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

// failure is a classified attempt error.
type failure struct {
	status     int
	kind       error
	what       string
	retryable  bool
	retryAfter time.Duration
	detail     string
	cause      error
	logCause   string
}

func (f failure) toError(attempts int) error {
	kind := f.kind
	if errors.Is(kind, domain.ErrRateLimited) && f.retryAfter > 0 {
		kind = &domain.RateLimitError{RetryAfterSeconds: int(math.Ceil(f.retryAfter.Seconds()))}
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
	f := classifyErr(err, res, apiKey)
	f.logCause = redact(err.Error(), apiKey)
	return f
}

func classifyErr(err error, res *http.Response, apiKey string) failure {
	var apiErr *oai.Error
	var streamErr *ssestream.StreamError
	switch {
	case errors.As(err, &apiErr):
		detail := joinDetail(apiErr.Type, apiErr.Code, apiErr.Message)
		f := byStatus(apiErr.StatusCode, apiErr.Code, apiErr.Type)
		f.detail, f.cause = redact(detail, apiKey), err
		f.retryAfter = retryAfter(apiErr.Response)
		return f
	case res != nil && res.StatusCode >= 400:
		// The body was not OpenAI's error shape (a proxy's HTML page, a
		// server's own JSON): the status is all we trust.
		f := byStatus(res.StatusCode, "", "")
		f.cause, f.retryAfter = err, retryAfter(res)
		return f
	case errors.As(err, &streamErr):
		// An error event inside a 200 stream. Servers put an HTTP-like status
		// in code or status (vLLM, LiteLLM) or only a type (OpenAI).
		status, code, typ, msg := parseStreamError(streamErr.Event.Data)
		f := byStatus(status, code, typ)
		f.detail, f.cause = redact(joinDetail(typ, code, msg), apiKey), err
		if status == 0 {
			f.status = 0
		}
		return f
	case errors.Is(err, errMalformed):
		return failure{kind: domain.ErrUnavailable, what: "model provider sent a malformed stream", retryable: true, cause: err}
	case errors.Is(err, errIncomplete):
		return failure{kind: domain.ErrUnavailable, what: "model provider ended the stream early", retryable: true, cause: err}
	default:
		// Connection refused or reset, TLS, DNS, a broken stream body, a
		// response that is not a stream at all.
		return failure{kind: domain.ErrUnavailable, what: "model provider connection failed", retryable: true, cause: err}
	}
}

// byStatus maps a provider status (or, without one, its error code and type)
// to a kind.
func byStatus(status int, code, typ string) failure {
	if status == 0 {
		status = statusFromCode(code, typ)
	}
	switch {
	case status == http.StatusTooManyRequests && code == "insufficient_quota":
		// Billing, not throttling: waiting does not help and users cannot fix it.
		return failure{status: status, kind: domain.ErrUnavailable, what: "model provider quota exhausted"}
	case status == http.StatusTooManyRequests:
		return failure{status: status, kind: domain.ErrRateLimited, what: "model provider rate limit reached", retryable: true}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		// Our credentials or permissions: a configuration error on our side.
		return failure{status: status, kind: domain.ErrUnavailable, what: "model provider rejected our credentials"}
	case status == http.StatusBadRequest || status == http.StatusNotFound ||
		status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity:
		return failure{status: status, kind: domain.ErrInvalidInput, what: "model provider refused the request"}
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		return failure{status: status, kind: domain.ErrUnavailable, what: "model provider failed", retryable: true}
	default:
		return failure{status: status, kind: domain.ErrUnavailable, what: "model provider answered unexpectedly"}
	}
}

// statusFromCode reads OpenAI-style error codes and types for in-stream errors
// that carry no status.
func statusFromCode(code, typ string) int {
	c := strings.ToLower(code + " " + typ)
	switch {
	case strings.Contains(c, "insufficient_quota"), strings.Contains(c, "rate_limit"), strings.Contains(c, "ratelimit"):
		return http.StatusTooManyRequests
	case strings.Contains(c, "invalid_api_key"), strings.Contains(c, "authentication"), strings.Contains(c, "permission"):
		return http.StatusUnauthorized
	case strings.Contains(c, "not_found"), strings.Contains(c, "notfound"):
		return http.StatusNotFound
	case strings.Contains(c, "invalid_request"), strings.Contains(c, "badrequest"), strings.Contains(c, "context_length"):
		return http.StatusBadRequest
	default:
		return http.StatusInternalServerError
	}
}

// parseStreamError reads {"error": {...}} or {"error": "text"} from an event.
func parseStreamError(data []byte) (status int, code, typ, msg string) {
	var ev struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return 0, "", "", ""
	}
	var s string
	if json.Unmarshal(ev.Error, &s) == nil {
		return 0, "", "", s
	}
	var body struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Status  json.RawMessage `json:"status"`
	}
	if json.Unmarshal(ev.Error, &body) != nil {
		return 0, "", "", ""
	}
	code = rawString(body.Code)
	status = httpStatus(rawString(body.Status))
	if status == 0 {
		status = httpStatus(code)
	}
	return status, code, body.Type, body.Message
}

// rawString turns a JSON string or number into its text; null is "".
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func httpStatus(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 400 || n > 599 {
		return 0
	}
	return n
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
