package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Contract tests against @dwmkerr/mock-llm, a third-party OpenAI-compatible
// server pinned in tools/mock-llm. Two behaviours of its version 0.1.29 shape
// them: it sends no usage when streaming, and when a rule's status is an error
// it streams the rule's body as an error event inside a 200 response. It also
// answers a streamed tool call with a real HTTP 500 (it cannot stream one), so
// streamed tool calls are covered by the in-repo fake instead.

const mockInstallHint = "mock-llm is not installed: run `npm ci --prefix tools/mock-llm`"

// mockLLM is one running mock-llm process.
type mockLLM struct {
	url string
	out *syncBuffer
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startMockLLM runs mock-llm on a free loopback port until the test ends. A
// missing install skips the test, except under CI, where it fails so a broken
// setup cannot pass silently.
func startMockLLM(t *testing.T) *mockLLM {
	t.Helper()
	bin := os.Getenv("MOCK_LLM_BIN")
	if bin == "" {
		root, err := filepath.Abs(filepath.Join("..", "..", "..", "tools", "mock-llm"))
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, "node_modules", ".bin", "mock-llm")
	}
	missing := ""
	if _, err := os.Stat(bin); err != nil {
		missing = bin + " not found"
	} else if _, err := exec.LookPath("node"); err != nil {
		missing = "node not on PATH"
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (%s)", mockInstallHint, missing)
		}
		t.Skipf("%s (%s)", mockInstallHint, missing)
	}

	dir := t.TempDir()
	config := filepath.Join(dir, "mock-llm.yaml")
	initial, _ := json.Marshal(mockConfig(echoRule()))
	// JSON is YAML; mock-llm reads the file with js-yaml.
	if err := os.WriteFile(config, initial, 0o600); err != nil {
		t.Fatal(err)
	}

	var lastErr error
	for try := 0; try < 3; try++ {
		port := freePort(t)
		out := &syncBuffer{}
		cmd := exec.Command(bin, "--config", config)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOST=127.0.0.1", "PORT="+strconv.Itoa(port))
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start mock-llm: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		m := &mockLLM{url: fmt.Sprintf("http://127.0.0.1:%d", port), out: out}
		if lastErr = m.waitReady(exited); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			return m
		}
		_ = cmd.Process.Kill()
		<-exited
		lastErr = fmt.Errorf("%w; output:\n%s", lastErr, out.String())
	}
	t.Fatalf("mock-llm did not start: %v", lastErr)
	return nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (m *mockLLM) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("mock-llm exited")
		default:
		}
		res, err := http.Get(m.url + "/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("mock-llm not ready after 20s")
}

// mockRule is one mock-llm response rule; content is the response JSON.
type mockRule struct {
	Match    string       `json:"match,omitempty"`
	Sequence *int         `json:"sequence,omitempty"`
	Path     string       `json:"path"`
	Method   string       `json:"method"`
	Response mockResponse `json:"response"`
}

type mockResponse struct {
	Status  int    `json:"status"`
	Content string `json:"content"`
}

func mockConfig(rules ...mockRule) map[string]any {
	return map[string]any{
		"streaming": map[string]int{"chunkSize": 6, "chunkIntervalMs": 1},
		"rules":     rules,
	}
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
	t.Helper()
	for _, step := range []struct {
		method string
		body   any
	}{{http.MethodDelete, nil}, {http.MethodPost, mockConfig(rules...)}} {
		var body io.Reader
		if step.body != nil {
			raw, _ := json.Marshal(step.body)
			body = bytes.NewReader(raw)
		}
		req, _ := http.NewRequest(step.method, m.url+"/config", body)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s /config: %s", step.method, res.Status)
		}
	}
}

// completions counts the chat requests mock-llm has logged.
func (m *mockLLM) completions() int {
	return strings.Count(m.out.String(), "POST /v1/chat/completions")
}

// expectCompletions waits for mock-llm's log to show want requests since
// before, then checks no more arrive.
func (m *mockLLM) expectCompletions(t *testing.T, before, want int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for m.completions()-before < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if got := m.completions() - before; got != want {
		t.Fatalf("mock-llm saw %d chat requests, want %d", got, want)
	}
}

func (m *mockLLM) model(t *testing.T, opts Options) *Model {
	t.Helper()
	opts.BaseURL = m.url + "/v1"
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
		var pe *providerError
		if !errors.Is(err, domain.ErrUnavailable) || !errors.As(err, &pe) || pe.status != http.StatusInternalServerError {
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
