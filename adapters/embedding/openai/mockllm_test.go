package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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

const mockInstallHint = "mock-llm is not installed: run `bash scripts/mock-llm.sh`"

type mockLLM struct {
	url string
	out *logBuffer
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

	// No config file: mock-llm starts with its defaults (chat completions
	// and models only).
	dir := t.TempDir()
	var lastErr error
	for try := 0; try < 3; try++ {
		port := freePort(t)
		out := &logBuffer{}
		cmd := exec.Command(bin)
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
	Path     string       `json:"path"`
	Method   string       `json:"method"`
	Response mockResponse `json:"response"`
}

type mockResponse struct {
	Status  int    `json:"status"`
	Content string `json:"content"`
}

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
	steps := []struct {
		method string
		body   any
	}{{http.MethodDelete, nil}}
	if len(rules) > 0 {
		steps = append(steps, struct {
			method string
			body   any
		}{http.MethodPost, map[string]any{
			"streaming": map[string]int{"chunkSize": 50, "chunkIntervalMs": 1},
			"rules":     rules,
		}})
	}
	for _, step := range steps {
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

// requests counts the embeddings requests mock-llm has logged.
func (m *mockLLM) requests() int {
	return strings.Count(m.out.String(), "POST /v1/embeddings")
}

// expectRequests waits for mock-llm's log to show want requests since
// before, then checks no more arrive.
func (m *mockLLM) expectRequests(t *testing.T, before, want int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for m.requests()-before < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if got := m.requests() - before; got != want {
		t.Fatalf("mock-llm saw %d embeddings requests, want %d", got, want)
	}
}

func (m *mockLLM) embedder(t *testing.T, opts Options, logs *logBuffer) (*Embedder, error) {
	t.Helper()
	opts.BaseURL = m.url + "/v1"
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
		var pe *providerError
		if !errors.Is(err, domain.ErrUnavailable) || !errors.As(err, &pe) || pe.status != http.StatusNotFound {
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
