package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/embedding/embeddingtest"
	"github.com/conciergehq/concierge/adapters/openaicompat"
	"github.com/conciergehq/concierge/core/domain"
)

// nativeDims is the fake model's own vector size.
const nativeDims = 48

const testKey = "sk-test-0123456789abcdef"

// embedRequest is the part of a request the tests look at.
type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     *int     `json:"dimensions"`
	EncodingFormat *string  `json:"encoding_format"`
}

// fakeServer speaks OpenAI's embeddings wire format. Each request is answered
// by the next handler of its script (the last one repeats; an empty script
// always answers); every request is kept for assertions.
type fakeServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	script   []http.HandlerFunc
	requests []embedRequest
	raw      []map[string]any
	headers  []http.Header
}

func newFake(t *testing.T, script ...http.HandlerFunc) *fakeServer {
	t.Helper()
	f := &fakeServer{script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req embedRequest
		var raw map[string]any
		if json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &raw) != nil {
			http.Error(w, "bad json", http.StatusTeapot)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		n := len(f.requests)
		f.requests = append(f.requests, req)
		f.raw = append(f.raw, raw)
		f.headers = append(f.headers, r.Header.Clone())
		h := answer(false)
		if len(f.script) > 0 {
			h = f.script[min(n, len(f.script)-1)]
		}
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeServer) request(i int) (embedRequest, map[string]any, http.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i], f.raw[i], f.headers[i]
}

// embedder returns an Embedder on the fake with millisecond backoff.
func (f *fakeServer) embedder(t *testing.T, opts Options) *Embedder {
	t.Helper()
	opts.BaseURL = f.srv.URL + "/v1"
	if opts.Model == "" {
		opts.Model = "test-embed"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	e, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	e.baseDelay, e.maxDelay = time.Millisecond, 20*time.Millisecond
	return e
}

// fakeVector is the fake model's deterministic, unnormalised vector of text.
func fakeVector(text string, dims int) []float64 {
	v := make([]float64, dims)
	for i := range v {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d\x00%s", i, text)
		v[i] = float64(int64(h.Sum64()%2001)-1000) / 100 // -10..10
	}
	return v
}

// unit is fakeVector normalised as float32, what Embed should return.
func unit(text string, dims int) []float32 {
	v := fakeVector(text, dims)
	var s float64
	for _, x := range v {
		s += float64(float32(x)) * float64(float32(x))
	}
	out := make([]float32, dims)
	for i, x := range v {
		out[i] = float32(float64(float32(x)) / math.Sqrt(s))
	}
	return out
}

type item struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// answer embeds the request's inputs with fakeVector, at the requested size
// or the native one, listing them in reverse order (indexes say which is
// which). It answers base64 when asked to, or always when forceBase64.
func answer(forceBase64 bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req embedRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad json", http.StatusTeapot)
			return
		}
		dims := nativeDims
		if req.Dimensions != nil {
			dims = *req.Dimensions
		}
		b64 := forceBase64 || req.EncodingFormat != nil && *req.EncodingFormat == "base64"
		items := make([]item, len(req.Input))
		for i, text := range req.Input {
			v := fakeVector(text, dims)
			var emb any = v
			if b64 {
				emb = encodeBase64(v)
			}
			items[len(items)-1-i] = item{Object: "embedding", Index: i, Embedding: emb}
		}
		writeData(w, items)
	}
}

func encodeBase64(v []float64) string {
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(buf)
}

func writeData(w http.ResponseWriter, items []item) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   items,
		"model":  "test-embed",
		"usage":  map[string]int{"prompt_tokens": 5, "total_tokens": 5},
	})
}

// fixed answers the given items whatever the request.
func fixed(items ...item) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { writeData(w, items) }
}

func status(code int, header http.Header, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func openAIError(message, typ, code string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}})
	return string(b)
}

// logBuffer collects log output from concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

func TestContract(t *testing.T) {
	t.Run("native size", func(t *testing.T) {
		embeddingtest.Contract(t, newFake(t).embedder(t, Options{APIKey: testKey}))
	})
	t.Run("requested size", func(t *testing.T) {
		embeddingtest.Contract(t, newFake(t).embedder(t, Options{APIKey: testKey, Dimensions: 16, BatchSize: 7}))
	})
	t.Run("base64 answers", func(t *testing.T) {
		embeddingtest.Contract(t, newFake(t, answer(true)).embedder(t, Options{}))
	})
}

func TestNew(t *testing.T) {
	t.Run("native size is probed once", func(t *testing.T) {
		f := newFake(t)
		e := f.embedder(t, Options{APIKey: testKey})
		if e.ID() != "openai:test-embed:48" || e.Dimensions() != nativeDims {
			t.Fatalf("ID %q, Dimensions %d", e.ID(), e.Dimensions())
		}
		if f.count() != 1 {
			t.Fatalf("%d requests, want the one probe", f.count())
		}
		req, raw, _ := f.request(0)
		if !reflect.DeepEqual(req.Input, []string{probeText}) || req.Model != "test-embed" {
			t.Fatalf("probe request %+v", req)
		}
		if _, ok := raw["dimensions"]; ok {
			t.Fatalf("probe sent dimensions: %v", raw)
		}
	})
	t.Run("requested size needs no probe", func(t *testing.T) {
		f := newFake(t)
		e := f.embedder(t, Options{Model: " text-embedding-3-small ", Dimensions: 256})
		if e.ID() != "openai:text-embedding-3-small:256" || e.Dimensions() != 256 {
			t.Fatalf("ID %q, Dimensions %d", e.ID(), e.Dimensions())
		}
		if f.count() != 0 {
			t.Fatalf("%d requests, want none", f.count())
		}
		if _, err := e.Embed(context.Background(), []string{"hello"}); err != nil {
			t.Fatal(err)
		}
		if req, _, _ := f.request(0); req.Dimensions == nil || *req.Dimensions != 256 {
			t.Fatalf("dimensions sent: %v", req.Dimensions)
		}
	})
	t.Run("failed probe fails New without the key", func(t *testing.T) {
		f := newFake(t, status(401, nil, openAIError("Incorrect API key provided: "+testKey, "invalid_request_error", "invalid_api_key")))
		var logs logBuffer
		_, err := New(context.Background(), Options{BaseURL: f.srv.URL + "/v1", Model: "m", APIKey: testKey, MaxRetries: 2, Logger: logs.logger()})
		if !errors.Is(err, domain.ErrUnavailable) || strings.Contains(err.Error(), testKey) {
			t.Fatalf("err = %v", err)
		}
		if f.count() != 1 {
			t.Fatalf("%d requests: a 401 is not retried", f.count())
		}
		if !strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), testKey) {
			t.Fatalf("log: %s", logs.String())
		}
	})

	bad := []struct {
		name string
		opts Options
	}{
		{"no base URL", Options{Model: "m", Dimensions: 8}},
		{"relative base URL", Options{BaseURL: "/v1", Model: "m", Dimensions: 8}},
		{"other scheme", Options{BaseURL: "ftp://host/v1", Model: "m", Dimensions: 8}},
		{"no model", Options{BaseURL: "http://127.0.0.1:1/v1", Model: "  ", Dimensions: 8}},
		{"negative dimensions", Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Dimensions: -1}},
		{"negative timeout", Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Dimensions: 8, Timeout: -time.Second}},
		{"negative retries", Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Dimensions: 8, MaxRetries: -1}},
		{"negative batch", Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Dimensions: 8, BatchSize: -1}},
		{"batch too large", Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Dimensions: 8, BatchSize: MaxBatchSize + 1}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if e, err := New(context.Background(), tt.opts); err == nil {
				t.Fatalf("New = %s, want an error", e.ID())
			}
		})
	}
}

func TestBatching(t *testing.T) {
	f := newFake(t)
	e := f.embedder(t, Options{APIKey: testKey, Dimensions: 8, BatchSize: 3})
	texts := []string{"one", "two", "", "three", "four", " \n", "five", "six", "seven"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		want := unit(text, 8)
		if strings.TrimSpace(text) == "" {
			want = make([]float32, 8)
		}
		if !reflect.DeepEqual(vecs[i], want) {
			t.Errorf("text %d %q: %v, want %v", i, text, vecs[i], want)
		}
	}
	wantInputs := [][]string{{"one", "two", "three"}, {"four", "five", "six"}, {"seven"}}
	if f.count() != len(wantInputs) {
		t.Fatalf("%d requests, want %d", f.count(), len(wantInputs))
	}
	for i, want := range wantInputs {
		req, raw, h := f.request(i)
		if !reflect.DeepEqual(req.Input, want) || req.Model != "test-embed" {
			t.Errorf("request %d: %+v, want inputs %q", i, req, want)
		}
		// openai-go sends no encoding_format unless asked, so servers answer
		// float arrays (base64 answers are decoded too: TestContract).
		if _, ok := raw["encoding_format"]; ok {
			t.Errorf("request %d sent encoding_format: %v", i, raw)
		}
		if got := h.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("request %d: Authorization %q", i, got)
		}
	}

	t.Run("blank texts only", func(t *testing.T) {
		before := f.count()
		vecs, err := e.Embed(context.Background(), []string{"", "  "})
		if err != nil || len(vecs) != 2 || len(vecs[1]) != 8 {
			t.Fatalf("%v %v", vecs, err)
		}
		if f.count() != before {
			t.Fatal("blank texts were sent")
		}
	})
}

func TestHeaders(t *testing.T) {
	f := newFake(t)
	e := f.embedder(t, Options{Dimensions: 8, Headers: map[string]string{"api-key": "azure-key"}})
	if _, err := e.Embed(context.Background(), []string{"hi"}); err != nil {
		t.Fatal(err)
	}
	_, _, h := f.request(0)
	if h.Get("api-key") != "azure-key" {
		t.Errorf("api-key header %q", h.Get("api-key"))
	}
	if got := h.Get("Authorization"); got != "" {
		t.Errorf("no key configured, yet Authorization %q", got)
	}
}

func TestRetry(t *testing.T) {
	tests := []struct {
		name   string
		script []http.HandlerFunc
	}{
		{"429 then 500 then success", []http.HandlerFunc{
			status(429, http.Header{"Retry-After-Ms": {"2"}}, openAIError("Rate limit reached", "requests", "rate_limit_exceeded")),
			status(500, nil, openAIError("The server had an error", "server_error", "")),
			answer(false),
		}},
		{"502 from a proxy, then success", []http.HandlerFunc{
			status(502, nil, "<html>Bad gateway</html>"),
			answer(false),
		}},
		{"unreadable 200, then success", []http.HandlerFunc{
			status(200, nil, `{"object":"list","data":[{"index":0,"embedd`),
			answer(false),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.script...)
			e := f.embedder(t, Options{Dimensions: 8, MaxRetries: 2})
			vecs, err := e.Embed(context.Background(), []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(vecs, [][]float32{unit("a", 8), unit("b", 8)}) {
				t.Fatalf("vectors %v", vecs)
			}
			if f.count() != len(tt.script) {
				t.Fatalf("%d requests, want %d", f.count(), len(tt.script))
			}
		})
	}
}

// TestFailures covers each kind of failure: its kind, how often it is tried,
// that neither the provider's text nor the key shows in the error, and what
// is logged.
func TestFailures(t *testing.T) {
	const providerText = "This model's maximum context length is 8192 tokens"
	keyEcho := openAIError("Incorrect API key provided: "+testKey+". You can find your API key at ...", "invalid_request_error", "invalid_api_key")
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		kind       error
		attempts   int    // with MaxRetries 2
		status     int    // in the error; 0: none
		retryAfter int    // RateLimitError's seconds; 0: not one
		log        string // level of the log line; "": none
	}{
		{"429 exhausted", status(429, nil, openAIError("Rate limit reached", "requests", "rate_limit_exceeded")),
			domain.ErrRateLimited, 3, 429, 0, ""},
		{"429 asking for longer than we wait", status(429, http.Header{"Retry-After": {"30"}}, openAIError("Rate limit reached", "requests", "rate_limit_exceeded")),
			domain.ErrRateLimited, 1, 429, 30, ""},
		{"429 out of quota", status(429, nil, openAIError("You exceeded your current quota", "insufficient_quota", "insufficient_quota")),
			domain.ErrUnavailable, 1, 429, 0, "ERROR"},
		{"500 exhausted", status(500, nil, openAIError("The server had an error", "server_error", "")),
			domain.ErrUnavailable, 3, 500, 0, ""},
		{"503 HTML", status(503, nil, "<html>"+providerText+"</html>"),
			domain.ErrUnavailable, 3, 503, 0, ""},
		{"400 input too long", status(400, nil, openAIError(providerText, "invalid_request_error", "context_length_exceeded")),
			domain.ErrInvalidInput, 1, 400, 0, "WARN"},
		{"413", status(413, nil, `{"error":"`+providerText+`"}`),
			domain.ErrInvalidInput, 1, 413, 0, "WARN"},
		{"422", status(422, nil, `{"detail":"`+providerText+`"}`),
			domain.ErrInvalidInput, 1, 422, 0, "WARN"},
		{"401 echoing the key", status(401, nil, keyEcho),
			domain.ErrUnavailable, 1, 401, 0, "ERROR"},
		{"403", status(403, nil, openAIError("You are not allowed to use "+testKey, "permission_error", "")),
			domain.ErrUnavailable, 1, 403, 0, "ERROR"},
		{"404 unknown model", status(404, nil, openAIError("The model `text-embedding-9` does not exist", "invalid_request_error", "model_not_found")),
			domain.ErrUnavailable, 1, 404, 0, "ERROR"},
		{"418 unexpected", status(418, nil, "teapot"),
			domain.ErrUnavailable, 1, 418, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler)
			var logs logBuffer
			e := f.embedder(t, Options{APIKey: testKey, Dimensions: 8, MaxRetries: 2, Logger: logs.logger()})
			vecs, err := e.Embed(context.Background(), []string{"some text"})
			if vecs != nil || !errors.Is(err, tt.kind) {
				t.Fatalf("Embed = %v, %v; want %v", vecs, err, tt.kind)
			}
			for _, other := range []error{domain.ErrRateLimited, domain.ErrUnavailable, domain.ErrInvalidInput} {
				if other != tt.kind && errors.Is(err, other) {
					t.Fatalf("err %v is also %v", err, other)
				}
			}
			if f.count() != tt.attempts {
				t.Fatalf("%d requests, want %d", f.count(), tt.attempts)
			}
			msg := err.Error()
			for _, leak := range []string{testKey, providerText, "Incorrect API key", "You exceeded", "not allowed", "does not exist", "teapot", "<html>"} {
				if strings.Contains(msg, leak) {
					t.Fatalf("error %q shows %q", msg, leak)
				}
			}
			var pe *openaicompat.ProviderError
			if !errors.As(err, &pe) || pe.Status != tt.status {
				t.Fatalf("err %#v: want a ProviderError with status %d", err, tt.status)
			}
			var rl *domain.RateLimitError
			if got := errors.As(err, &rl); got != (tt.retryAfter > 0) || got && rl.RetryAfterSeconds != tt.retryAfter {
				t.Fatalf("RateLimitError %+v, want %d seconds", rl, tt.retryAfter)
			}
			if tt.kind == domain.ErrInvalidInput {
				var ve *domain.ValidationError
				if !errors.As(err, &ve) || ve.Message != refusedInput {
					t.Fatalf("want a ValidationError with the generic message, got %v", err)
				}
			}
			out := logs.String()
			if strings.Contains(out, testKey) {
				t.Fatalf("the key was logged: %s", out)
			}
			if tt.log == "" && out != "" || tt.log != "" && !strings.Contains(out, "level="+tt.log) {
				t.Fatalf("log %q, want level %q", out, tt.log)
			}
			// Operators get the provider's words, redacted, in the error's
			// log value.
			var buf bytes.Buffer
			slog.New(slog.NewTextHandler(&buf, nil)).Error("embedding failed", "error", err)
			if strings.Contains(buf.String(), testKey) {
				t.Fatalf("LogValue shows the key: %s", buf.String())
			}
			if strings.HasPrefix(tt.name, "401") && !strings.Contains(buf.String(), "[redacted]") {
				t.Fatalf("LogValue lacks the provider's (redacted) words: %s", buf.String())
			}
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		f := newFake(t)
		e := f.embedder(t, Options{Dimensions: 8, MaxRetries: 1})
		f.srv.Close()
		_, err := e.Embed(context.Background(), []string{"x"})
		if !errors.Is(err, domain.ErrUnavailable) || !strings.Contains(err.Error(), "connection failed after 2 attempts") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestMalformed(t *testing.T) {
	vec := func(xs ...float64) []float64 { return xs }
	tests := []struct {
		name    string
		dims    int // Options.Dimensions; 0 learns 3 from the probe
		handler http.HandlerFunc
	}{
		{"too few vectors", 3, fixed(item{Index: 0, Embedding: vec(1, 2, 3)})},
		{"too many vectors", 3, fixed(item{Index: 0, Embedding: vec(1, 2, 3)}, item{Index: 1, Embedding: vec(1, 2, 3)}, item{Index: 2, Embedding: vec(1, 2, 3)})},
		{"repeated index", 3, fixed(item{Index: 0, Embedding: vec(1, 2, 3)}, item{Index: 0, Embedding: vec(1, 2, 3)})},
		{"index out of range", 3, fixed(item{Index: 0, Embedding: vec(1, 2, 3)}, item{Index: 2, Embedding: vec(1, 2, 3)})},
		{"negative index", 3, fixed(item{Index: -1, Embedding: vec(1, 2, 3)}, item{Index: 0, Embedding: vec(1, 2, 3)})},
		{"size ignored by the server", 3, fixed(item{Index: 0, Embedding: vec(1, 2, 3, 4)}, item{Index: 1, Embedding: vec(1, 2, 3, 4)})},
		{"sizes differ", 3, fixed(item{Index: 0, Embedding: vec(1, 2, 3)}, item{Index: 1, Embedding: vec(1, 2)})},
		{"size changed since the probe", 0, fixed(item{Index: 0, Embedding: vec(1, 2, 3, 4)}, item{Index: 1, Embedding: vec(1, 2, 3, 4)})},
		{"NaN", 3, fixed(item{Index: 0, Embedding: encodeBase64(vec(1, math.NaN(), 3))}, item{Index: 1, Embedding: vec(1, 2, 3)})},
		{"infinity", 3, fixed(item{Index: 0, Embedding: vec(1, 2, 3)}, item{Index: 1, Embedding: encodeBase64(vec(1, math.Inf(-1), 3))})},
		{"beyond float32", 3, fixed(item{Index: 0, Embedding: vec(1, 2, 3)}, item{Index: 1, Embedding: vec(1, 1e39, 3)})},
		{"zero vector", 3, fixed(item{Index: 0, Embedding: vec(0, 0, 0)}, item{Index: 1, Embedding: vec(1, 2, 3)})},
		{"empty vectors", 0, fixed(item{Index: 0, Embedding: vec()}, item{Index: 1, Embedding: vec()})},
		{"no embedding field", 3, fixed(item{Index: 0}, item{Index: 1})},
		{"bad base64", 3, fixed(item{Index: 0, Embedding: "AAAA!"}, item{Index: 1, Embedding: vec(1, 2, 3)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probe := fixed(item{Index: 0, Embedding: vec(1, 2, 2)})
			f := newFake(t, probe, tt.handler)
			if tt.dims != 0 {
				f = newFake(t, tt.handler)
			}
			e := f.embedder(t, Options{Dimensions: tt.dims, MaxRetries: 2})
			before := f.count()
			vecs, err := e.Embed(context.Background(), []string{"a", "b"})
			if vecs != nil || !errors.Is(err, domain.ErrUnavailable) || errors.Is(err, domain.ErrInvalidInput) {
				t.Fatalf("Embed = %v, %v; want ErrUnavailable", vecs, err)
			}
			if n := f.count() - before; n != 1 {
				t.Fatalf("%d requests: a malformed answer is not retried", n)
			}
			t.Log(err)
		})
	}

	t.Run("probe answering an empty vector", func(t *testing.T) {
		f := newFake(t, fixed(item{Index: 0, Embedding: []float64{}}))
		_, err := New(context.Background(), Options{BaseURL: f.srv.URL + "/v1", Model: "m"})
		if !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
	})
}

// slow answers after delay, or gives up when the client does.
func slow(delay time.Duration, started chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if started != nil {
			started <- struct{}{}
		}
		select {
		case <-time.After(delay):
			answer(false)(w, r)
		case <-r.Context().Done():
		}
	}
}

func TestTimeout(t *testing.T) {
	f := newFake(t, slow(5*time.Second, nil))
	e := f.embedder(t, Options{Dimensions: 8, Timeout: 150 * time.Millisecond, MaxRetries: 3})
	start := time.Now()
	_, err := e.Embed(context.Background(), []string{"x"})
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("took %v with a 150ms timeout", elapsed)
	}
	if !errors.Is(err, domain.ErrUnavailable) || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("err = %v", err)
	}
}

func TestContextCancelled(t *testing.T) {
	t.Run("before the call", func(t *testing.T) {
		f := newFake(t)
		e := f.embedder(t, Options{Dimensions: 8})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if f.count() != 0 {
			t.Fatal("a request was sent")
		}
	})
	t.Run("during the request", func(t *testing.T) {
		started := make(chan struct{}, 1)
		f := newFake(t, slow(5*time.Second, started))
		e := f.embedder(t, Options{Dimensions: 8, MaxRetries: 3})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		_, err := e.Embed(ctx, []string{"x"})
		if !errors.Is(err, context.Canceled) || errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		if f.count() != 1 {
			t.Fatalf("%d requests after a cancel", f.count())
		}
	})
	t.Run("during backoff", func(t *testing.T) {
		f := newFake(t, status(500, nil, "{}"))
		e := f.embedder(t, Options{Dimensions: 8, MaxRetries: 3})
		e.baseDelay, e.maxDelay = 5*time.Second, 5*time.Second
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, err := e.Embed(ctx, []string{"x"})
		if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
			t.Fatalf("err = %v after %v", err, time.Since(start))
		}
	})
}

func TestConcurrent(t *testing.T) {
	f := newFake(t)
	e := f.embedder(t, Options{Dimensions: 8, BatchSize: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			texts := []string{fmt.Sprint("a", g), fmt.Sprint("b", g), fmt.Sprint("c", g)}
			vecs, err := e.Embed(context.Background(), texts)
			if err != nil {
				errs <- err
				return
			}
			for i, text := range texts {
				if !reflect.DeepEqual(vecs[i], unit(text, 8)) {
					errs <- fmt.Errorf("goroutine %d: vector %d is not its text's", g, i)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
