package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/openaicompat"
	"github.com/conciergehq/concierge/adapters/openaicompat/mockllmtest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Contract tests against @dwmkerr/mock-llm, a third-party OpenAI-compatible
// server pinned in tools/mock-llm. Two behaviours of its version 0.1.29 shape
// them: it sends no usage when streaming, and when a rule's status is an error
// it streams the rule's body as an error event inside a 200 response. It also
// answers a streamed tool call with a real HTTP 500 (it cannot stream one), so
// streamed tool calls are covered by the in-repo fake instead.

// mockLLM is one running mock-llm process.
type mockLLM struct{ *mockllmtest.Server }

type (
	mockRule     = mockllmtest.Rule
	mockResponse = mockllmtest.Response
)

// mockChunkSize makes streamed answers arrive in many small chunks.
const mockChunkSize = 6

func startMockLLM(t *testing.T) *mockLLM {
	return &mockLLM{mockllmtest.Start(t, &mockllmtest.Config{ChunkSize: mockChunkSize, Rules: []mockRule{echoRule()}})}
}

func rule(match string, status int, content string) mockRule {
	return mockRule{Match: match, Path: "/v1/chat/completions", Method: "POST", Response: mockResponse{Status: status, Content: content}}
}

func reply(text string) string {
	c, _ := json.Marshal(text)
	return `{"id":"chatcmpl-{{timestamp}}","object":"chat.completion","model":"{{jmes request body.model}}",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + string(c) + `},"finish_reason":"stop"}]}`
}

// echoRule answers with the model name and the last message, as mock-llm's
// default does.
func echoRule() mockRule {
	return rule("@", 200, reply("{{jmes request body.model}}: {{jmes request body.messages[-1].content}}"))
}

// configure replaces the rules and resets mock-llm's sequence counters.
func (m *mockLLM) configure(t *testing.T, rules ...mockRule) {
	m.Configure(t, &mockllmtest.Config{ChunkSize: mockChunkSize, Rules: rules})
}

// completions counts the chat requests mock-llm has logged.
func (m *mockLLM) completions() int { return m.Count("/v1/chat/completions") }

// expectCompletions waits for want chat requests since before, then checks
// no more arrive.
func (m *mockLLM) expectCompletions(t *testing.T, before, want int) {
	t.Helper()
	m.Expect(t, "/v1/chat/completions", before, want)
}

func (m *mockLLM) model(t *testing.T, opts Options) *Model {
	t.Helper()
	opts.BaseURL = m.URL + "/v1"
	if opts.Model == "" {
		opts.Model = "mock-model"
	}
	if opts.APIKey == "" {
		opts.APIKey = "sk-mock"
	}
	model, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	model.baseDelay, model.maxDelay = 5*time.Millisecond, 20*time.Millisecond
	return model
}

func TestMockLLM(t *testing.T) {
	mock := startMockLLM(t)
	ctx := context.Background()

	t.Run("streamed text", func(t *testing.T) {
		const answerText = "Refunds are processed within 5 business days [1]. Shipping is free [3]."
		mock.configure(t, echoRule(), rule("contains(body.messages[-1].content, 'refund')", 200, reply(answerText)))
		req := userTurn("how do refunds work?")
		req.Knowledge = []domain.Chunk{
			{ID: "chk_refunds", DocumentName: "Refund policy", Text: "Refunds take 5 business days."},
			{ID: "chk_other", DocumentName: "Other", Text: "Unrelated."},
		}
		var d deltas
		before := mock.completions()
		comp, err := mock.model(t, Options{}).Complete(ctx, req, d.on)
		if err != nil {
			t.Fatal(err)
		}
		if comp.Content != answerText || d.joined() != answerText {
			t.Fatalf("content %q, deltas %q", comp.Content, d.got)
		}
		if len(d.got) < 2 {
			t.Fatalf("want the answer in several deltas, got %q", d.got)
		}
		if !reflect.DeepEqual(comp.Cited, []string{"chk_refunds"}) {
			t.Fatalf("cited %v", comp.Cited)
		}
		if len(comp.ToolCalls) != 0 {
			t.Fatalf("tool calls %+v", comp.ToolCalls)
		}
		// mock-llm 0.1.29 reports no usage in streams; a server that does is
		// covered by the fake.
		t.Logf("usage from mock-llm: %+v", comp.Usage)
		mock.expectCompletions(t, before, 1)
	})

	t.Run("grounded request offers no_answer; citations only name retrieved passages", func(t *testing.T) {
		// The rule answers only a request that, as mock-llm parses it,
		// offers the decline tool next to the agent's tool and tells the
		// model to use it; anything else gets the echo. mock-llm cannot
		// stream a tool call (see above), so the decline itself is covered
		// by the fake (decline_test.go).
		const answerText = "Parcels take 3 days [2]. Ask about [7], [0] or [2a]."
		grounded := rule("body.tools && contains(body.tools[].function.name, 'no_answer') && "+
			"contains(body.tools[].function.name, 'lookup_order') && "+
			"contains(body.messages[1].content, 'call the no_answer tool instead of answering')", 200, reply(answerText))
		mock.configure(t, echoRule(), grounded)
		req := userTurn("how long is shipping?")
		req.Knowledge = []domain.Chunk{
			{ID: "chk_returns", DocumentName: "Returns", Text: "Returns are free."},
			{ID: "chk_shipping", DocumentName: "Shipping", Text: "Parcels take 3 days."},
		}
		req.Tools = []ports.ToolSpec{{Name: "lookup_order", Parameters: []byte(`{"type":"object","properties":{"order_id":{"type":"string"}}}`)}}
		comp, err := mock.model(t, Options{}).Complete(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if comp.Content != answerText || comp.Declined || len(comp.ToolCalls) != 0 {
			t.Fatalf("completion %+v", comp)
		}
		if !reflect.DeepEqual(comp.Cited, []string{"chk_shipping"}) {
			t.Fatalf("cited %v", comp.Cited)
		}

		// Without passages there is nothing to decline from: no tool, so
		// the echo answers.
		req.Knowledge = nil
		comp, err = mock.model(t, Options{}).Complete(ctx, req, nil)
		if err != nil || comp.Content != "mock-model: how long is shipping?" || comp.Cited != nil {
			t.Fatalf("without knowledge: %+v %v", comp, err)
		}
	})

	t.Run("model override reaches the server", func(t *testing.T) {
		mock.configure(t, echoRule())
		m := mock.model(t, Options{Model: "default-model"})
		comp, err := m.Complete(ctx, userTurn("ping"), nil)
		if err != nil || comp.Content != "default-model: ping" {
			t.Fatalf("default: %q %v", comp.Content, err)
		}
		req := userTurn("pong")
		req.Model = "agent-model"
		comp, err = m.Complete(ctx, req, nil)
		if err != nil || comp.Content != "agent-model: pong" {
			t.Fatalf("override: %q %v", comp.Content, err)
		}
	})

	t.Run("server error is retried then succeeds", func(t *testing.T) {
		zero, one := 0, 1
		failing := rule("", 500, `{"error":{"message":"The server had an error","type":"server_error"}}`)
		failing.Match, failing.Sequence = "@", &zero
		ok := rule("@", 200, reply("Recovered answer."))
		ok.Sequence = &one
		mock.configure(t, failing, ok)
		var d deltas
		before := mock.completions()
		comp, err := mock.model(t, Options{MaxRetries: 2}).Complete(ctx, userTurn("hi"), d.on)
		if err != nil {
			t.Fatal(err)
		}
		if comp.Content != "Recovered answer." || d.joined() != comp.Content {
			t.Fatalf("content %q deltas %q", comp.Content, d.got)
		}
		mock.expectCompletions(t, before, 2)
	})

	t.Run("500 is retried then unavailable", func(t *testing.T) {
		const providerText = "The server had an error while processing your request"
		mock.configure(t, rule("@", 500, `{"error":{"message":"`+providerText+`","type":"server_error"}}`))
		before := mock.completions()
		_, err := mock.model(t, Options{MaxRetries: 2}).Complete(ctx, userTurn("hi"), nil)
		if !errors.Is(err, domain.ErrUnavailable) || errors.Is(err, domain.ErrInvalidInput) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		if strings.Contains(err.Error(), providerText) {
			t.Fatalf("provider text leaked: %v", err)
		}
		mock.expectCompletions(t, before, 3)
	})

	t.Run("HTTP 500 for a streamed tool call is retried then unavailable", func(t *testing.T) {
		mock.configure(t, rule("@", 200,
			`{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`))
		before := mock.completions()
		_, err := mock.model(t, Options{MaxRetries: 1}).Complete(ctx, userTurn("weather?"), nil)
		var pe *openaicompat.ProviderError
		if !errors.Is(err, domain.ErrUnavailable) || !errors.As(err, &pe) || pe.Status != http.StatusInternalServerError {
			t.Fatalf("err = %v, want ErrUnavailable from an HTTP 500", err)
		}
		if strings.Contains(err.Error(), "Cannot read properties") {
			t.Fatalf("provider text leaked: %v", err)
		}
		mock.expectCompletions(t, before, 2)
	})

	t.Run("401 is unavailable, not retried, without provider text", func(t *testing.T) {
		mock.configure(t, rule("@", 401,
			`{"error":{"message":"Incorrect API key provided: sk-mock.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
		before := mock.completions()
		_, err := mock.model(t, Options{MaxRetries: 2}).Complete(ctx, userTurn("hi"), nil)
		if !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		if msg := err.Error(); strings.Contains(msg, "Incorrect API key") || strings.Contains(msg, "sk-mock") {
			t.Fatalf("provider text leaked: %q", msg)
		}
		mock.expectCompletions(t, before, 1)
	})

	t.Run("429 is retried then rate limited", func(t *testing.T) {
		mock.configure(t, rule("@", 429,
			`{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`))
		before := mock.completions()
		_, err := mock.model(t, Options{MaxRetries: 1}).Complete(ctx, userTurn("hi"), nil)
		if !errors.Is(err, domain.ErrRateLimited) {
			t.Fatalf("err = %v, want ErrRateLimited", err)
		}
		mock.expectCompletions(t, before, 2)
	})

	t.Run("tool round history is accepted", func(t *testing.T) {
		mock.configure(t, echoRule())
		req := ports.CompletionRequest{
			System: "sys",
			Messages: []ports.LLMMessage{
				{Role: "user", Content: "weather in Paris?"},
				{Role: "assistant", ToolCalls: []domain.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
				{Role: "tool", ToolCallID: "call_1", Content: "sunny"},
			},
		}
		comp, err := mock.model(t, Options{}).Complete(ctx, req, nil)
		if err != nil || comp.Content != "mock-model: sunny" {
			t.Fatalf("%q %v", comp.Content, err)
		}
	})
}
