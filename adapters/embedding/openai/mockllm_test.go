package openai

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/openaicompat"
	"github.com/conciergehq/concierge/adapters/openaicompat/mockllmtest"
	"github.com/conciergehq/concierge/core/domain"
)

// Contract tests against @dwmkerr/mock-llm, the third-party OpenAI-compatible
// server pinned in tools/mock-llm. Its version 0.1.29 has no embeddings
// endpoint of its own: out of the box POST /v1/embeddings is a 404 (the first
// subtest pins that). Its rules can answer any path, though, so the other
// subtests configure canned /v1/embeddings answers, matched with JMESPath on
// the request body. That checks the SDK's requests and our decoding against
// a server that is not ours; per-input vectors, batching and retries in
// depth are covered by the in-repo fake.

// mockLLM is one running mock-llm process.
type mockLLM struct{ *mockllmtest.Server }

type (
	mockRule     = mockllmtest.Rule
	mockResponse = mockllmtest.Response
)

// startMockLLM starts mock-llm with its defaults (chat completions and
// models only).
func startMockLLM(t *testing.T) *mockLLM { return &mockLLM{mockllmtest.Start(t, nil)} }

func embeddingsRule(match string, status int, content string) mockRule {
	return mockRule{Match: match, Path: "^/v1/embeddings$", Method: "POST", Response: mockResponse{Status: status, Content: content}}
}

// embeddingsBody is an embeddings answer listing vecs under their indexes,
// in the order given.
func embeddingsBody(indexes []int, vecs ...[]float64) string {
	items := make([]item, len(vecs))
	for i, v := range vecs {
		items[i] = item{Object: "embedding", Index: indexes[i], Embedding: v}
	}
	b, _ := json.Marshal(map[string]any{
		"object": "list", "data": items, "model": "{{jmes request body.model}}",
		"usage": map[string]int{"prompt_tokens": 4, "total_tokens": 4},
	})
	return string(b)
}

// configure replaces the rules (an empty list restores the defaults) and
// resets mock-llm's sequence counters.
func (m *mockLLM) configure(t *testing.T, rules ...mockRule) {
	t.Helper()
	if len(rules) == 0 {
		m.Configure(t, nil)
		return
	}
	m.Configure(t, &mockllmtest.Config{ChunkSize: 50, Rules: rules})
}

// requests counts the embeddings requests mock-llm has logged.
func (m *mockLLM) requests() int { return m.Count("/v1/embeddings") }

// expectRequests waits for want embeddings requests since before, then
// checks no more arrive.
func (m *mockLLM) expectRequests(t *testing.T, before, want int) {
	t.Helper()
	m.Expect(t, "/v1/embeddings", before, want)
}

func (m *mockLLM) embedder(t *testing.T, opts Options, logs *logBuffer) (*Embedder, error) {
	t.Helper()
	opts.BaseURL = m.URL + "/v1"
	opts.Model = "mock-embed"
	opts.APIKey = testKey
	opts.Logger = logs.logger()
	e, err := New(context.Background(), opts)
	if e != nil {
		e.baseDelay, e.maxDelay = 5*time.Millisecond, 20*time.Millisecond
	}
	return e, err
}

func near(a []float32, b ...float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i])-b[i]) > 1e-6 {
			return false
		}
	}
	return true
}

func TestMockLLM(t *testing.T) {
	mock := startMockLLM(t)
	ctx := context.Background()
	// The requests openai-go sends: inputs as an array, the model, no
	// encoding_format (so float answers), dimensions only when set.
	const plain = "body.model == 'mock-embed' && body.encoding_format == `null` && body.dimensions == `null`"

	t.Run("no embeddings endpoint out of the box", func(t *testing.T) {
		mock.configure(t)
		var logs logBuffer
		before := mock.requests()
		_, err := mock.embedder(t, Options{MaxRetries: 2}, &logs)
		var pe *openaicompat.ProviderError
		if !errors.Is(err, domain.ErrUnavailable) || !errors.As(err, &pe) || pe.Status != http.StatusNotFound {
			t.Fatalf("err = %v, want ErrUnavailable from a 404", err)
		}
		if strings.Contains(err.Error(), "Cannot POST") || !strings.Contains(logs.String(), "level=ERROR") {
			t.Fatalf("err %q, log %q", err, logs.String())
		}
		mock.expectRequests(t, before, 1)
	})

	t.Run("probe, then a batch answered out of order", func(t *testing.T) {
		mock.configure(t,
			embeddingsRule(plain+" && body.input == `[\""+probeText+"\"]`", 200, embeddingsBody([]int{0}, []float64{0, 0, 2})),
			embeddingsRule(plain+" && body.input == `[\"refunds\", \"shipping\"]`", 200,
				embeddingsBody([]int{1, 0}, []float64{0, 3, 4}, []float64{1, 2, 2})),
		)
		var logs logBuffer
		before := mock.requests()
		e, err := mock.embedder(t, Options{}, &logs)
		if err != nil {
			t.Fatal(err)
		}
		if e.ID() != "openai:mock-embed:3" {
			t.Fatalf("ID %q", e.ID())
		}
		vecs, err := e.Embed(ctx, []string{"refunds", "", "shipping"})
		if err != nil {
			t.Fatal(err)
		}
		if !near(vecs[0], 1.0/3, 2.0/3, 2.0/3) || !near(vecs[1], 0, 0, 0) || !near(vecs[2], 0, 0.6, 0.8) {
			t.Fatalf("vectors %v", vecs)
		}
		mock.expectRequests(t, before, 2)
	})

	t.Run("dimensions are sent", func(t *testing.T) {
		mock.configure(t, embeddingsRule("body.dimensions == `2` && body.input == `[\"hello\"]`", 200, embeddingsBody([]int{0}, []float64{3, 4})))
		var logs logBuffer
		e, err := mock.embedder(t, Options{Dimensions: 2}, &logs)
		if err != nil {
			t.Fatal(err)
		}
		vecs, err := e.Embed(ctx, []string{"hello"})
		if err != nil || !near(vecs[0], 0.6, 0.8) {
			t.Fatalf("%v %v", vecs, err)
		}
	})

	failures := []struct {
		name     string
		status   int
		body     string
		kind     error
		attempts int // with MaxRetries 2
	}{
		{"429 is retried then rate limited", 429, openAIError("Rate limit reached", "requests", "rate_limit_exceeded"), domain.ErrRateLimited, 3},
		{"500 is retried then unavailable", 500, openAIError("The server had an error", "server_error", ""), domain.ErrUnavailable, 3},
		{"400 is invalid input", 400, openAIError("This model's maximum context length is 8192 tokens", "invalid_request_error", "context_length_exceeded"), domain.ErrInvalidInput, 1},
		{"401 is unavailable", 401, openAIError("Incorrect API key provided: "+testKey, "invalid_request_error", "invalid_api_key"), domain.ErrUnavailable, 1},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			mock.configure(t, embeddingsRule("@", tt.status, tt.body))
			var logs logBuffer
			e, err := mock.embedder(t, Options{Dimensions: 3, MaxRetries: 2}, &logs)
			if err != nil {
				t.Fatal(err)
			}
			before := mock.requests()
			_, err = e.Embed(ctx, []string{"hello"})
			if !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
			if msg := err.Error(); strings.Contains(msg, testKey) || strings.Contains(msg, "maximum context") || strings.Contains(msg, "Incorrect") {
				t.Fatalf("provider text leaked: %q", msg)
			}
			if strings.Contains(logs.String(), testKey) {
				t.Fatalf("key logged: %s", logs.String())
			}
			mock.expectRequests(t, before, tt.attempts)
		})
	}
}
