package openaicompat

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name     string
		headers  map[string]string
		min, max time.Duration
	}{
		{"none", nil, 0, 0},
		{"milliseconds first", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, 250 * time.Millisecond},
		{"seconds", map[string]string{"Retry-After": "2.5"}, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": future}, 80 * time.Second, 90 * time.Second},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, 0},
		{"absurd", map[string]string{"Retry-After": "99999999"}, 0, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &http.Response{Header: http.Header{}}
			for k, v := range tt.headers {
				res.Header.Set(k, v)
			}
			if got := RetryAfter(res); got < tt.min || got > tt.max {
				t.Fatalf("RetryAfter = %v, want in [%v, %v]", got, tt.min, tt.max)
			}
		})
	}
	if RetryAfter(nil) != 0 {
		t.Fatal("RetryAfter(nil) != 0")
	}
}

func TestRedactAndDetail(t *testing.T) {
	if got := Redact("bad key sk-secret-123 given", "sk-secret-123"); got != "bad key [redacted] given" {
		t.Fatalf("Redact = %q", got)
	}
	long := Redact(strings.Repeat("é", 400), "")
	if len(long) > maxDetail+3 || !strings.HasSuffix(long, "...") || !strings.HasPrefix(long, "é") {
		t.Fatalf("long detail = %d bytes %q…", len(long), long[:10])
	}
	if got := JoinDetail(" invalid_request_error ", "", "context too long"); got != "invalid_request_error: context too long" {
		t.Fatalf("JoinDetail = %q", got)
	}
}

func TestBackoff(t *testing.T) {
	ctx := context.Background()
	for attempt := range 40 {
		wait, ok := Backoff(ctx, attempt, 0, 100*time.Millisecond, 5*time.Second)
		step := min(100*time.Millisecond<<min(attempt, 30), 5*time.Second)
		if attempt >= 30 {
			step = 5 * time.Second
		}
		if !ok || wait < step/2 || wait > step {
			t.Fatalf("attempt %d: %v, %v; want within [%v, %v]", attempt, wait, ok, step/2, step)
		}
	}
	if wait, ok := Backoff(ctx, 0, 2*time.Second, time.Millisecond, 5*time.Second); !ok || wait != 2*time.Second {
		t.Fatalf("a requested wait: %v, %v", wait, ok)
	}
	if _, ok := Backoff(ctx, 0, time.Minute, time.Millisecond, 5*time.Second); ok {
		t.Fatal("waited longer than the cap because the server asked")
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, ok := Backoff(short, 0, time.Second, time.Millisecond, 5*time.Second); ok {
		t.Fatal("waited past the deadline")
	}
}

func TestProviderError(t *testing.T) {
	cause := errors.New("dial tcp: refused")
	err := &ProviderError{Service: "openai", Kind: domain.ErrUnavailable, What: "model provider failed", Status: 503,
		Attempts: 3, Detail: "upstream says: secret internals", Cause: cause, LogCause: cause.Error()}
	if err.Error() != "openai: model provider failed (HTTP 503)" {
		t.Fatalf("Error() = %q", err.Error())
	}
	if !errors.Is(err, domain.ErrUnavailable) || !errors.Is(err, cause) {
		t.Fatal("kind or cause not reachable through errors.Is")
	}
	if strings.Contains(err.Error(), "secret internals") {
		t.Fatal("provider text in the message")
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Error("x", "error", err)
	if !strings.Contains(b.String(), "secret internals") || !strings.Contains(b.String(), "attempts=3") {
		t.Fatalf("log line lacks the provider detail: %s", b.String())
	}
}
