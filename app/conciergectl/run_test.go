package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/openapi/openapitest"
)

const testKey = "ck_live_test_0123456789"

// seenRequest is what the fake API recorded about one call, including its
// answer so the test can check the script against the OpenAPI document.
type seenRequest struct {
	Method, Path  string
	Query         url.Values
	Authorization string
	UserAgent     string

	req    *http.Request
	status int
	header http.Header
	body   []byte
}

// fakeAPI plays the documented v2 API from a script: answers are chosen by
// path and cursor, so pagination can be scripted page by page.
type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []seenRequest
	script map[string]answer // "path" or "path?cursor=C"
}

type answer struct {
	status int
	body   string
	delay  time.Duration
	ctype  string
	header map[string]string
}

func newFakeAPI(t *testing.T, script map[string]answer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
		Authorization: r.Header.Get("Authorization"), UserAgent: r.Header.Get("User-Agent"),
		req: r.Clone(context.Background()),
	})
	seen := len(f.seen) - 1
	a, ok := f.script[r.URL.Path+"?cursor="+r.URL.Query().Get("cursor")]
	if !ok {
		a, ok = f.script[r.URL.Path]
	}
	f.mu.Unlock()
	if !ok {
		a = answer{status: 404, body: `{"error":{"code":"NOT_FOUND","message":"no such route"}}`}
	}
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-r.Context().Done():
			return
		}
	}
	ctype := a.ctype
	if ctype == "" {
		ctype = "application/json"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Request-Id", "req_test")
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)

	f.mu.Lock()
	f.seen[seen].status, f.seen[seen].header, f.seen[seen].body = a.status, w.Header().Clone(), []byte(a.body)
	f.mu.Unlock()
}

func (f *fakeAPI) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

func (f *fakeAPI) baseURL() string { return f.srv.URL + "/api/v2" }

func runCLI(t *testing.T, envVars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return envVars[k] }
	code := run(context.Background(), args, getenv, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func page(items string, next string) string {
	if next == "" {
		return `{"data":[` + items + `],"meta":{"nextCursor":null,"hasMore":false}}`
	}
	return `{"data":[` + items + `],"meta":{"nextCursor":"` + next + `","hasMore":true}}`
}

const (
	agentSupport = `{"id":"agt_1","slug":"support","name":"Support desk","systemPrompt":"","welcomeMessage":"Hi!","suggestedQuestions":[],
		"fallbackMessage":"","published":true,"model":null,"blockedTopics":[],"retrievalTopK":5,"retrievalThreshold":0.2,"primaryColor":"#2563eb","avatarUrl":"","allowedOrigins":[],"widgetUrl":"http://localhost:8080/chat/support","createdAt":"2026-11-21T10:00:00.123Z","updatedAt":"2026-11-21T10:00:00.123Z"}`
	agentSales = `{"id":"agt_2","slug":"sales","name":"Sales","systemPrompt":"","welcomeMessage":"","suggestedQuestions":[],
		"fallbackMessage":"","published":false,"model":null,"blockedTopics":[],"retrievalTopK":5,"retrievalThreshold":0.2,"primaryColor":"#2563eb","avatarUrl":"","allowedOrigins":[],"widgetUrl":"http://localhost:8080/chat/agt_2","createdAt":"2026-11-22T08:30:00.000Z","updatedAt":"2026-11-22T08:30:00.000Z"}`
)

func conversation(id, lastMessage string) string {
	b, _ := json.Marshal(map[string]any{
		"id": id, "agent": "support", "channel": "CHAT", "status": "AI", "lastMessage": lastMessage,
		"messageCount": 2, "verifiedUserId": nil, "assigneeId": nil, "handoffRequestedAt": nil, "lastActivityAt": "2026-11-21T10:05:00.000Z", "createdAt": "2026-11-21T10:00:00.000Z", "outcome": nil,
	})
	return string(b)
}

func TestRun(t *testing.T) {
	longMessage := strings.Repeat("x", 60) + "\tEND"
	tests := []struct {
		name       string
		script     map[string]answer
		args       []string
		noKey      bool
		wantCode   int
		wantStdout []string // substrings, in order
		wantExact  string   // exact stdout when set
		wantStderr []string
		noStderr   bool
		wantCalls  []url.Values // query of each call, in order; nil skips the check
		// offContract marks answers the real API never gives (a proxy's
		// page, a broken body): they are not checked against the document.
		offContract bool
	}{
		{
			name:   "agents table",
			script: map[string]answer{"/api/v2/agents": {status: 200, body: page(agentSupport+","+agentSales, "")}},
			args:   []string{"agents", "list"},
			wantStdout: []string{
				"SLUG     NAME          PUBLISHED  CREATED\n",
				"support  Support desk  yes        2026-11-21 10:00 UTC\n",
				"sales    Sales         no         2026-11-22 08:30 UTC\n",
			},
			noStderr:  true,
			wantCalls: []url.Values{{}},
		},
		{
			name:       "agents table with more pages hints the cursor on stderr",
			script:     map[string]answer{"/api/v2/agents": {status: 200, body: page(agentSupport, "cur_2")}},
			args:       []string{"agents", "list", "--limit", "1"},
			wantStdout: []string{"support"},
			wantStderr: []string{"--cursor cur_2"},
			wantCalls:  []url.Values{{"limit": {"1"}}},
		},
		{
			name:      "agents json prints the raw page",
			script:    map[string]answer{"/api/v2/agents": {status: 200, body: page(agentSupport, "cur_2")}},
			args:      []string{"agents", "list", "--json", "--cursor", "cur_1", "--limit", "100"},
			wantExact: page(agentSupport, "cur_2") + "\n",
			noStderr:  true,
			wantCalls: []url.Values{{"cursor": {"cur_1"}, "limit": {"100"}}},
		},
		{
			name: "conversations table truncates the last message",
			script: map[string]answer{"/api/v2/conversations": {status: 200, body: page(
				conversation("ses_1", "Hello\nthere")+","+conversation("ses_2", longMessage), "")}},
			args: []string{"conversations", "list", "--agent", "support", "--status", "human"},
			wantStdout: []string{
				"ID     AGENT    CHANNEL  STATUS  LAST ACTIVITY         LAST MESSAGE\n",
				"ses_1  support  CHAT     AI      2026-11-21 10:05 UTC  Hello there\n",
				"ses_2  support  CHAT     AI      2026-11-21 10:05 UTC  " + strings.Repeat("x", 49) + "…\n",
			},
			noStderr:  true,
			wantCalls: []url.Values{{"agent": {"support"}, "status": {"HUMAN"}}},
		},
		{
			name: "conversations --all follows cursors across 3 pages",
			script: map[string]answer{
				"/api/v2/conversations?cursor=":   {status: 200, body: page(conversation("ses_1", "one"), "c2")},
				"/api/v2/conversations?cursor=c2": {status: 200, body: page(conversation("ses_2", "two"), "c3")},
				"/api/v2/conversations?cursor=c3": {status: 200, body: page(conversation("ses_3", "three"), "")},
			},
			args:       []string{"conversations", "list", "--all", "--agent", "support"},
			wantStdout: []string{"ses_1", "one", "ses_2", "two", "ses_3", "three"},
			noStderr:   true,
			wantCalls: []url.Values{
				{"agent": {"support"}, "limit": {"100"}},
				{"agent": {"support"}, "limit": {"100"}, "cursor": {"c2"}},
				{"agent": {"support"}, "limit": {"100"}, "cursor": {"c3"}},
			},
		},
		{
			name: "conversations --all --json prints one data object",
			script: map[string]answer{
				"/api/v2/conversations?cursor=":   {status: 200, body: page(conversation("ses_1", "one"), "c2")},
				"/api/v2/conversations?cursor=c2": {status: 200, body: page(conversation("ses_2", "two"), "c3")},
				"/api/v2/conversations?cursor=c3": {status: 200, body: page(conversation("ses_3", "three"), "")},
			},
			args:      []string{"conversations", "list", "--all", "--json", "--limit", "1"},
			wantExact: `{"data":[` + conversation("ses_1", "one") + "," + conversation("ses_2", "two") + "," + conversation("ses_3", "three") + "]}\n",
			noStderr:  true,
			wantCalls: []url.Values{{"limit": {"1"}}, {"limit": {"1"}, "cursor": {"c2"}}, {"limit": {"1"}, "cursor": {"c3"}}},
		},
		{
			name:       "empty list",
			script:     map[string]answer{"/api/v2/agents": {status: 200, body: page("", "")}},
			args:       []string{"agents", "list"},
			wantStdout: []string{"No agents."},
			noStderr:   true,
		},
		{name: "limit 0 is a usage error", args: []string{"agents", "list", "--limit", "0"}, wantCode: exitUsage, wantStderr: []string{"--limit must be between 1 and 100"}, wantCalls: []url.Values{}},
		{name: "limit 101 is a usage error", args: []string{"conversations", "list", "--limit", "101"}, wantCode: exitUsage, wantStderr: []string{"--limit must be between 1 and 100"}, wantCalls: []url.Values{}},
		{name: "bad status is a usage error", args: []string{"conversations", "list", "--status", "OPEN"}, wantCode: exitUsage, wantStderr: []string{"--status must be one of"}, wantCalls: []url.Values{}},
		{name: "unknown flag", args: []string{"agents", "list", "--bogus"}, wantCode: exitUsage, wantStderr: []string{"unknown flag: --bogus"}, wantCalls: []url.Values{}},
		{name: "unknown command", args: []string{"agents", "lsit"}, wantCode: exitUsage, wantStderr: []string{`unknown command "lsit"`, "did you mean list?"}, wantCalls: []url.Values{}},
		{name: "no command", args: nil, wantCode: exitUsage, wantStderr: []string{"needs a command: agents, analytics, conversations"}, wantCalls: []url.Values{}},
		{name: "extra argument", args: []string{"agents", "list", "support"}, wantCode: exitUsage, wantCalls: []url.Values{}},
		{
			name: "missing key", args: []string{"agents", "list"}, noKey: true, wantCode: exitUsage,
			wantStderr: []string{"CONCIERGE_API_KEY is not set", "export CONCIERGE_API_KEY"}, wantCalls: []url.Values{},
		},
		{
			name:       "401 is an auth failure",
			script:     map[string]answer{"/api/v2/agents": {status: 401, body: `{"error":{"code":"UNAUTHORIZED","message":"invalid API key"}}`}},
			args:       []string{"agents", "list"},
			wantCode:   exitAuth,
			wantStderr: []string{"conciergectl: invalid API key (UNAUTHORIZED)\n"},
		},
		{
			name: "403 plan upgrade",
			script: map[string]answer{"/api/v2/conversations": {status: 403, body: `{"error":{"code":"PLAN_UPGRADE_REQUIRED",
				"message":"the hobby plan does not include apiAccess; upgrade to standard or above","details":{"feature":"apiAccess","plan":"hobby"}}}`}},
			args:       []string{"conversations", "list"},
			wantCode:   exitPlan,
			wantStderr: []string{"conciergectl: the hobby plan does not include apiAccess; upgrade to standard or above (PLAN_UPGRADE_REQUIRED)\n"},
		},
		{
			name:       "404 unknown agent",
			script:     map[string]answer{"/api/v2/conversations": {status: 404, body: `{"error":{"code":"NOT_FOUND","message":"agent not found"}}`}},
			args:       []string{"conversations", "list", "--agent", "nope"},
			wantCode:   exitNotFound,
			wantStderr: []string{"conciergectl: agent not found (NOT_FOUND)\n"},
		},
		{
			name:       "400 from the server is another API error",
			script:     map[string]answer{"/api/v2/agents": {status: 400, body: `{"error":{"code":"VALIDATION_ERROR","message":"cursor: is not a cursor issued by this API"}}`}},
			args:       []string{"agents", "list", "--cursor", "forged"},
			wantCode:   exitOther,
			wantStderr: []string{"conciergectl: cursor: is not a cursor issued by this API (VALIDATION_ERROR)\n"},
		},
		{
			name:       "500 prints the server's message",
			script:     map[string]answer{"/api/v2/agents": {status: 500, body: `{"error":{"code":"INTERNAL","message":"internal error"}}`}},
			args:       []string{"agents", "list"},
			wantCode:   exitOther,
			wantStderr: []string{"conciergectl: internal error (INTERNAL)\n"},
		},
		{
			name:        "non-JSON error page",
			script:      map[string]answer{"/api/v2/agents": {status: 502, body: "<html>Bad Gateway</html>", ctype: "text/html"}},
			args:        []string{"agents", "list"},
			wantCode:    exitOther,
			wantStderr:  []string{"conciergectl: server answered 502 Bad Gateway (HTTP_502)\n"},
			offContract: true,
		},
		{
			name:        "success without meta is an unexpected response",
			script:      map[string]answer{"/api/v2/agents": {status: 200, body: `{"data":[]}`}},
			args:        []string{"agents", "list"},
			wantCode:    exitOther,
			wantStderr:  []string{"unexpected response from", "/api/v2/agents"},
			offContract: true,
		},
		{
			name: "--all stops on a repeated cursor",
			script: map[string]answer{
				"/api/v2/agents?cursor=":   {status: 200, body: page(agentSupport, "c2")},
				"/api/v2/agents?cursor=c2": {status: 200, body: page(agentSales, "c2")},
			},
			args:       []string{"agents", "list", "--all"},
			wantCode:   exitOther,
			wantStderr: []string{"repeated a cursor"},
		},
		{
			name:       "timeout is a network error",
			script:     map[string]answer{"/api/v2/agents": {status: 200, body: page("", ""), delay: 2 * time.Second}},
			args:       []string{"agents", "list", "--timeout", "50ms"},
			wantCode:   exitNetwork,
			wantStderr: []string{"no answer from http://127.0.0.1:", "/api/v2/agents within 50ms (NETWORK)"},
		},
		{name: "zero timeout is a usage error", args: []string{"agents", "list", "--timeout", "0s"}, wantCode: exitUsage, wantCalls: []url.Values{}},
	}

	contract := openapitest.New(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.script)
			envVars := map[string]string{"CONCIERGE_API_URL": api.baseURL()}
			if !tt.noKey {
				envVars["CONCIERGE_API_KEY"] = testKey
			}
			code, stdout, stderr := runCLI(t, envVars, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, stdout, stderr)
			}
			if tt.wantExact != "" && stdout != tt.wantExact {
				t.Errorf("stdout =\n%s\nwant\n%s", stdout, tt.wantExact)
			}
			rest := stdout
			for _, want := range tt.wantStdout {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Errorf("stdout lacks %q (in order)\nstdout:\n%s", want, stdout)
					break
				}
				rest = rest[i+len(want):]
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q\nstderr: %s", want, stderr)
				}
			}
			if tt.noStderr && stderr != "" {
				t.Errorf("stderr = %q, want empty", stderr)
			}
			if tt.wantCode != exitOK && tt.wantCode != exitUsage {
				// API failures are one line; usage errors add a hint line.
				if n := strings.Count(stderr, "\n"); n != 1 {
					t.Errorf("stderr has %d lines, want 1: %q", n, stderr)
				}
			}

			calls := api.requests()
			for _, c := range calls {
				// The scripted server must play the documented API, or these
				// tests would prove the client against a fiction.
				if c.status != 0 && !tt.offContract {
					contract.ValidateResponse(t, c.req, &http.Response{StatusCode: c.status, Status: http.StatusText(c.status), Header: c.header}, c.body)
				}
				if c.Authorization != "Bearer "+testKey {
					t.Errorf("Authorization = %q, want the bearer key", c.Authorization)
				}
				if !strings.HasPrefix(c.UserAgent, "conciergectl/") {
					t.Errorf("User-Agent = %q, want conciergectl/<version>", c.UserAgent)
				}
				if c.Method != http.MethodGet {
					t.Errorf("method = %s, want GET", c.Method)
				}
			}
			if tt.wantCalls != nil {
				if len(calls) != len(tt.wantCalls) {
					t.Fatalf("server saw %d requests, want %d: %+v", len(calls), len(tt.wantCalls), calls)
				}
				for i, want := range tt.wantCalls {
					if got := calls[i].Query; !sameQuery(got, want) {
						t.Errorf("request %d query = %v, want %v", i, got, want)
					}
				}
			}
		})
	}
}

func sameQuery(a, b url.Values) bool { return a.Encode() == b.Encode() }

func TestRunPaths(t *testing.T) {
	api := newFakeAPI(t, map[string]answer{
		"/api/v2/agents":        {status: 200, body: page("", "")},
		"/api/v2/conversations": {status: 200, body: page("", "")},
	})
	tests := []struct {
		name    string
		baseURL string
		args    []string
		path    string
	}{
		{"agents", api.baseURL(), []string{"agents", "list"}, "/api/v2/agents"},
		{"conversations", api.baseURL(), []string{"conversations", "list"}, "/api/v2/conversations"},
		{"trailing slash accepted", api.baseURL() + "/", []string{"agents", "list"}, "/api/v2/agents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(api.requests())
			code, _, stderr := runCLI(t, map[string]string{"CONCIERGE_API_KEY": testKey, "CONCIERGE_API_URL": tt.baseURL}, tt.args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			calls := api.requests()[before:]
			if len(calls) != 1 || calls[0].Path != tt.path {
				t.Fatalf("requests = %+v, want one to %s", calls, tt.path)
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	// A server that was started and closed leaves a port nobody listens on.
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/api/v2"
	srv.Close()

	code, stdout, stderr := runCLI(t, map[string]string{"CONCIERGE_API_KEY": testKey, "CONCIERGE_API_URL": base}, "agents", "list")
	if code != exitNetwork {
		t.Fatalf("exit code = %d, want %d; stderr: %s", code, exitNetwork, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want empty", stdout)
	}
	if !strings.Contains(stderr, "cannot reach "+base+"/agents") || !strings.Contains(stderr, "refused") {
		t.Errorf("stderr = %q, want the URL and the reason", stderr)
	}
}

func TestBaseURL(t *testing.T) {
	tests := []struct {
		raw     string
		want    string
		wantErr bool
	}{
		{"", "http://127.0.0.1:8080/api/v2", false},
		{"http://127.0.0.1:8080/api/v2", "http://127.0.0.1:8080/api/v2", false},
		{"https://support.example.com/api/v2/", "https://support.example.com/api/v2", false},
		{"https://example.com/concierge/api/v2", "https://example.com/concierge/api/v2", false},
		{"http://127.0.0.1:8080", "", true},
		{"http://127.0.0.1:8080/api/v1", "", true},
		{"127.0.0.1:8080/api/v2", "", true},
		{"ftp://example.com/api/v2", "", true},
		{"http://example.com/api/v2?x=1", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			u, err := parseBaseURL(tt.raw)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && u.String() != tt.want {
				t.Errorf("got %s, want %s", u, tt.want)
			}
		})
	}

	// A bad URL is a usage error, before any request.
	code, _, stderr := runCLI(t, map[string]string{"CONCIERGE_API_KEY": testKey, "CONCIERGE_API_URL": "http://127.0.0.1:8080"}, "agents", "list")
	if code != exitUsage || !strings.Contains(stderr, "must end in /api/v2") {
		t.Errorf("exit %d, stderr %q; want a usage error about /api/v2", code, stderr)
	}
}

func TestHelpDocumentsExitCodes(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "--help")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"CONCIERGE_API_KEY", "CONCIERGE_API_URL", "Exit codes:", "0  success", "2  usage",
		"3  authentication", "4  plan", "5  network", "6  not found", "agents", "conversations"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestTableCellsAreSanitised(t *testing.T) {
	// Server text must not break the columns or reach the terminal as escapes.
	got := cell("a\tb\n\x1b[31mred\x1b[0m  c")
	if want := "a b [31mred[0m c"; got != want {
		t.Errorf("cell = %q, want %q", got, want)
	}
	if got := truncate("héllo wörld", 5); got != "héll…" {
		t.Errorf("truncate = %q", got)
	}
}
