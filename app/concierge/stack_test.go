package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/openapi/openapitest"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/adapters/tracing"
	"github.com/conciergehq/concierge/config"
	"github.com/conciergehq/concierge/core/domain"
)

// stack is one Concierge process wired exactly as `concierge dev` wires it,
// on a fresh PostgreSQL database and a private Redis database.
type stack struct {
	t        testing.TB
	sys      *system
	base     string
	env      map[string]string
	spec     *openapitest.Validator
	client   *http.Client
	stopHTTP context.CancelFunc
	httpDone chan struct{}

	shutdownOnce sync.Once

	workerMu   sync.Mutex
	stopWorker context.CancelFunc
	workerDone chan struct{}
}

type stackOptions struct {
	env        map[string]string
	withWorker bool
	// logSink, when set, receives every log line of the process at debug
	// level; otherwise warnings go to the test log.
	logSink io.Writer
	// traces, when set, is the process's tracing (as e.tracing builds it
	// from OTEL_*): its log lines then carry their trace.
	traces *tracing.Tracing
}

// testEnv is the configuration tests run Concierge with: a fresh
// PostgreSQL database, the Redis at redisURL, and then each of overrides
// in turn.
func testEnv(t testing.TB, redisURL string, overrides ...map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{
		"CONCIERGE_DATABASE_URL": pgtest.NewDatabase(t),
		"CONCIERGE_REDIS_URL":    redisURL,
		"CONCIERGE_LOG_LEVEL":    "warn",
		// Rate limits are tested on their own; keep them out of other tests' way.
		"CONCIERGE_RATE_LIMIT_API_PER_MINUTE":     "100000",
		"CONCIERGE_RATE_LIMIT_WEBHOOK_PER_MINUTE": "100000",
		"CONCIERGE_RATE_LIMIT_PUBLIC_PER_MINUTE":  "100000",
		"CONCIERGE_INBOUND_SWEEP_PERIOD":          "1s",
		"CONCIERGE_SHUTDOWN_TIMEOUT":              "5s",
	}
	for _, o := range overrides {
		for k, v := range o {
			env[k] = v
		}
	}
	return env
}

func newStack(t testing.TB, opts stackOptions) *stack {
	t.Helper()
	env := testEnv(t, redistest.URL(t), map[string]string{"CONCIERGE_HTTP_ADDR": "127.0.0.1:0"}, opts.env)
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(&testLogWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if opts.logSink != nil {
		log = slog.New(slog.NewTextHandler(opts.logSink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts.traces != nil {
		log = slog.New(tracing.LogHandler(log.Handler()))
	}
	sys, err := connect(context.Background(), cfg, log, opts.traces)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &stack{
		t: t, sys: sys, base: "http://" + ln.Addr().String(), env: env,
		spec: openapitest.New(t), client: &http.Client{Timeout: 30 * time.Second},
		stopHTTP: cancel, httpDone: make(chan struct{}),
	}
	go func() {
		defer close(s.httpDone)
		if err := sys.serveHTTP(ctx, ln); err != nil {
			t.Errorf("serveHTTP: %v", err)
		}
	}()
	if opts.withWorker {
		s.startWorker()
	}
	t.Cleanup(s.shutdown)
	return s
}

// shutdown stops the worker and the HTTP server and closes connections; it
// runs at cleanup and may be called earlier, for example to flush logs.
func (s *stack) shutdown() {
	s.shutdownOnce.Do(func() {
		s.stopWorkerAndWait()
		s.stopHTTP()
		<-s.httpDone
		s.sys.close()
	})
}

// startWorker runs the asynq worker in this process.
func (s *stack) startWorker() {
	s.workerMu.Lock()
	defer s.workerMu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWorker, s.workerDone = cancel, make(chan struct{})
	go func() {
		defer close(s.workerDone)
		if err := s.sys.runWorker(ctx); err != nil {
			s.t.Errorf("runWorker: %v", err)
		}
	}()
}

func (s *stack) stopWorkerAndWait() {
	s.workerMu.Lock()
	defer s.workerMu.Unlock()
	if s.stopWorker != nil {
		s.stopWorker()
		<-s.workerDone
		s.stopWorker = nil
	}
}

// testLogWriter sends the service's warnings to the test log.
type testLogWriter struct{ t testing.TB }

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// tenant is a workspace with its secrets, created through the real use case.
type tenant struct {
	ID            string
	Key           string
	KeyID         string
	WebhookSecret string
}

func (s *stack) newTenant(plan domain.Plan) tenant {
	s.t.Helper()
	created, err := s.sys.workspaces.CreateWorkspace(context.Background(), "tenant "+plan.Title(), plan)
	if err != nil {
		s.t.Fatal(err)
	}
	return tenant{ID: created.Workspace.ID, Key: created.APIKeySecret, KeyID: created.APIKey.ID, WebhookSecret: created.Workspace.WebhookSecret}
}

// response is a finished HTTP exchange.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map, failing the test on bad JSON.
func (r response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// decode unmarshals the body into v.
func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.Body, err)
	}
}

// errorCode returns error.code of an error body ("" if it is not one).
func (r response) errorCode(t testing.TB) string {
	t.Helper()
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &body)
	if body.Error.Code != "" && body.Error.Message == "" {
		t.Fatalf("error body without a message: %s", r.Body)
	}
	return body.Error.Code
}

type header map[string]string

// do sends a request and validates the answer against the OpenAPI document.
// body may be nil, a string (sent as is) or any value (sent as JSON).
func (s *stack) do(method, path string, body any, h header) response {
	s.t.Helper()
	return s.send(method, path, body, h, true)
}

// raw is do without the OpenAPI check, for deliberately undocumented requests.
func (s *stack) raw(method, path string, body any, h header) response {
	s.t.Helper()
	return s.send(method, path, body, h, false)
}

func (s *stack) send(method, path string, body any, h header, checkSpec bool) response {
	s.t.Helper()
	spec := s.spec
	if !checkSpec {
		spec = nil
	}
	return sendRequest(s.t, s.client, spec, method, s.base+path, body, h)
}

// sendRequest sends a request with client, reads the whole answer and, with
// a spec, validates it against the OpenAPI document. body as for stack.do.
func sendRequest(t testing.TB, client *http.Client, spec *openapitest.Validator, method, url string, body any, h header) response {
	t.Helper()
	req := newRequest(t, context.Background(), method, url, body, h)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if spec != nil {
		spec.ValidateResponse(t, req, resp, raw)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// newRequest builds a request: body nil, a string or []byte (sent as is) or
// any value (sent as JSON, with its Content-Type); a header set to "" is
// left out.
func newRequest(t testing.TB, ctx context.Context, method, url string, body any, h header) *http.Request {
	t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	case []byte:
		reader = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	return req
}

// as returns headers authenticating with the tenant's API key.
func (tn tenant) auth() header { return header{"Authorization": "Bearer " + tn.Key} }

func (s *stack) mustStatus(r response, want int) {
	s.t.Helper()
	if r.Status != want {
		s.t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
}

// upload sends a multipart form with the given fields and one file part
// named "file", validating the answer against the OpenAPI document.
func (s *stack) upload(tn tenant, slug string, fields map[string]string, filename string, content []byte) response {
	s.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			s.t.Fatal(err)
		}
	}
	if filename != "" {
		part, err := w.CreateFormFile("file", filename)
		if err != nil {
			s.t.Fatal(err)
		}
		if _, err := part.Write(content); err != nil {
			s.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		s.t.Fatal(err)
	}
	req, err := http.NewRequest("POST", s.base+"/api/v2/agents/"+slug+"/sources", &buf)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+tn.Key)
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("upload: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	// The multipart body was consumed; the validator checks the response.
	req.Body = http.NoBody
	s.spec.ValidateResponse(s.t, req, resp, raw)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// ensureWorker starts the in-process worker unless it runs already.
func (s *stack) ensureWorker() {
	s.workerMu.Lock()
	running := s.stopWorker != nil
	s.workerMu.Unlock()
	if !running {
		s.startWorker()
	}
}

// waitIndexed waits until every source of the agent is READY or FAILED and
// returns them, newest first. It starts the worker if needed.
func (s *stack) waitIndexed(tn tenant, slug string) []map[string]any {
	s.t.Helper()
	s.ensureWorker()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list listBody[map[string]any]
		r := s.do("GET", "/api/v2/agents/"+slug+"/sources?limit=100", nil, tn.auth())
		s.mustStatus(r, 200)
		r.decode(s.t, &list)
		done := true
		for _, src := range list.Data {
			if st := src["status"]; st != "READY" && st != "FAILED" {
				done = false
			}
		}
		if done {
			return list.Data
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("sources still indexing after 30 s: %v", list.Data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
