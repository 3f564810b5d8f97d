// Package openaicompat is the plumbing shared by the adapters that talk to
// OpenAI-compatible HTTP APIs: chat completions (adapters/llm/openai) and
// embeddings (adapters/embedding/openai); the webhook sender
// (adapters/helpdesk/webhook) reads its receivers' Retry-After with it too.
// It implements no port and imports no adapter, so any adapter may depend
// on it (core/architecture_test.go allows it across adapter roots).
package openaicompat

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ProviderError is a failed call to a provider. Its message is ours alone:
// what the provider said is kept in Detail, which only LogValue shows,
// because provider text can echo prompts, inputs, key fragments or internal
// names.
type ProviderError struct {
	// Service starts the message: "openai", "openai embeddings".
	Service string
	// Kind is a domain kind, or a *domain.RateLimitError or
	// *domain.ValidationError carrying one.
	Kind     error
	What     string
	Status   int // the provider's HTTP (or in-stream) status; 0 if none
	Attempts int
	Detail   string // provider text, redacted and truncated
	Cause    error
	LogCause string // Cause.Error(), redacted and truncated
}

func (e *ProviderError) Error() string {
	msg := e.Service + ": " + e.What
	if e.Status != 0 {
		msg += " (HTTP " + strconv.Itoa(e.Status) + ")"
	}
	return msg
}

// Unwrap exposes the kind for errors.Is/As and the cause for logs.
func (e *ProviderError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// LogValue adds the provider's own words for operators, never for users.
func (e *ProviderError) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("msg", e.Error()), slog.Int("attempts", e.Attempts)}
	if e.Detail != "" {
		attrs = append(attrs, slog.String("provider", e.Detail))
	}
	if e.LogCause != "" {
		attrs = append(attrs, slog.String("cause", e.LogCause))
	}
	return slog.GroupValue(attrs...)
}

// RetryAfter reads the provider's requested wait: Retry-After-Ms, then
// Retry-After in seconds or as an HTTP date; 0 when there is none.
func RetryAfter(res *http.Response) time.Duration {
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

// maxDetail bounds the provider text kept for logs.
const maxDetail = 300

// JoinDetail joins the non-blank parts of a provider's error (type, code,
// message) with ": ".
func JoinDetail(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ": ")
}

// Redact keeps provider text short and free of our own key, should a
// provider echo it.
func Redact(s, apiKey string) string {
	if apiKey != "" {
		s = strings.ReplaceAll(s, apiKey, "[redacted]")
	}
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "..."
	}
	return s
}

// Backoff returns how long to wait before retry number attempt+1, and false
// when waiting makes no sense: the server asked for longer than maxDelay, or
// the wait would outlast ctx's deadline. Without a requested wait it is
// exponential from baseDelay, capped at maxDelay, with equal jitter (between
// half and all of the step), so callers that failed together do not retry
// together.
func Backoff(ctx context.Context, attempt int, retryAfter, baseDelay, maxDelay time.Duration) (time.Duration, bool) {
	var wait time.Duration
	if retryAfter > 0 {
		if retryAfter > maxDelay {
			return 0, false
		}
		wait = retryAfter
	} else {
		d := maxDelay
		if attempt < 30 && baseDelay<<attempt < maxDelay {
			d = baseDelay << attempt
		}
		wait = d/2 + rand.N(d/2+1)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return 0, false
	}
	return wait, true
}
