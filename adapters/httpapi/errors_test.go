package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func TestDescribeError(t *testing.T) {
	driverErr := errors.New(`pq: duplicate key value violates unique constraint "agents_pkey"`)
	tests := []struct {
		name    string
		err     error
		status  int
		code    string
		message string // substring; "" skips
	}{
		{"validation", domain.InvalidField("limit", "must be between 1 and 100"), 400, "VALIDATION_ERROR", "limit"},
		{"wrapped validation", fmt.Errorf("ctx: %w", domain.Invalid("message is required")), 400, "VALIDATION_ERROR", "message is required"},
		{"bare invalid kind", domain.ErrInvalidInput, 400, "VALIDATION_ERROR", ""},
		{"unauthorized", domain.Unauthorized("invalid API key"), 401, "UNAUTHORIZED", "invalid API key"},
		{"plan", &domain.PlanError{Feature: domain.FeatureAPIAccess, Plan: domain.PlanFree}, 403, "PLAN_UPGRADE_REQUIRED", "standard"},
		{"not found", domain.NotFound("agent"), 404, "NOT_FOUND", "agent not found"},
		{"conflict", domain.Conflict("slug taken"), 409, "CONFLICT", "slug taken"},
		{"rate limited", &domain.RateLimitError{RetryAfterSeconds: 7}, 429, "RATE_LIMITED", ""},
		{"unavailable hides the cause", domain.Unavailable("postgres", errors.New("dial tcp 10.0.0.5:5432: refused")), 503, "UNAVAILABLE", ""},
		{"unknown hides the cause", driverErr, 500, "INTERNAL", "internal error"},
		{"route not found", fiber.ErrNotFound, 404, "NOT_FOUND", ""},
		{"method not allowed", fiber.ErrMethodNotAllowed, 405, "METHOD_NOT_ALLOWED", ""},
		{"too large", fiber.ErrRequestEntityTooLarge, 413, "PAYLOAD_TOO_LARGE", ""},
		{"media type", fiber.ErrUnsupportedMediaType, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"other fiber 4xx", fiber.ErrRequestHeaderFieldsTooLarge, 400, "VALIDATION_ERROR", ""},
		{"fiber 5xx", fiber.ErrBadGateway, 500, "INTERNAL", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := wire.DescribeError(tt.err)
			if status != tt.status || body.Error.Code != tt.code {
				t.Fatalf("got %d %s, want %d %s", status, body.Error.Code, tt.status, tt.code)
			}
			if body.Error.Message == "" || !strings.Contains(body.Error.Message, tt.message) {
				t.Fatalf("message %q, want it to contain %q", body.Error.Message, tt.message)
			}
			for _, leak := range []string{"pq:", "dial tcp", "10.0.0.5"} {
				if strings.Contains(body.Error.Message, leak) {
					t.Fatalf("message leaks %q: %s", leak, body.Error.Message)
				}
			}
		})
	}
}

// A conflict may say what conflicts: the details reach the body.
func TestDescribeConflictDetails(t *testing.T) {
	err := fmt.Errorf("set status: %w", &domain.ConflictError{
		Message: "a HUMAN conversation cannot move to HANDOFF_REQUESTED",
		Details: map[string]string{"from": "HUMAN", "to": "HANDOFF_REQUESTED"},
	})
	status, body := wire.DescribeError(err)
	if status != 409 || body.Error.Code != "CONFLICT" || body.Error.Details["from"] != "HUMAN" || body.Error.Details["to"] != "HANDOFF_REQUESTED" {
		t.Fatalf("got %d %+v", status, body)
	}
	if _, body := wire.DescribeError(domain.Conflict("slug taken")); body.Error.Details != nil {
		t.Errorf("a conflict without details has details %v", body.Error.Details)
	}
}

type checker struct{ err error }

func (c checker) Ping(context.Context) error { return c.err }

func TestReadyz(t *testing.T) {
	tests := []struct {
		name   string
		checks map[string]ports.HealthChecker
		status int
		want   map[string]string
	}{
		{"all reachable", map[string]ports.HealthChecker{"postgres": checker{}, "redis": checker{}}, 200, map[string]string{"postgres": "ok", "redis": "ok"}},
		{"redis down", map[string]ports.HealthChecker{"postgres": checker{}, "redis": checker{errors.New("refused")}}, 503, map[string]string{"postgres": "ok", "redis": "unreachable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, err := New(context.Background(), Services{}, Deps{Health: tt.checks, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Options{BodyLimitBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := app.Test(httptest.NewRequest("GET", "/readyz", nil), -1)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Checks map[string]string `json:"checks"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || fmt.Sprint(body.Checks) != fmt.Sprint(tt.want) {
				t.Fatalf("got %d %v, want %d %v", resp.StatusCode, body.Checks, tt.status, tt.want)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Fatal("no X-Request-Id")
			}
		})
	}
}
