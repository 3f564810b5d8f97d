package openapitest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/conciergehq/concierge/adapters/httpapi/openapi/openapitest"
)

// recorder stands in for *testing.T so a test can see that the validator
// failed without failing itself.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// scripted is one canned answer of the fake server.
type scripted struct {
	status      int
	contentType string
	headers     map[string]string
	body        string
}

const (
	agentJSON = `{"id":"agt_1","slug":"support","name":"Support","systemPrompt":"Be nice.","welcomeMessage":"Hi!",
		"suggestedQuestions":["How do I reset my password?"],"fallbackMessage":"","published":true,"model":null,"blockedTopics":[],"retrievalTopK":5,"retrievalThreshold":0.15,
		"primaryColor":"#2563eb","avatarUrl":"","allowedOrigins":[],"widgetUrl":"https://chat.example.com/chat/support",
		"createdAt":"2026-11-21T10:00:00.123Z","updatedAt":"2026-11-21T10:00:00.123Z"}`
	conversationFields = `"id":"ses_1","agent":"support","channel":"CHAT","status":"AI","lastMessage":"hello",
		"messageCount":2,"verifiedUserId":null,"assigneeId":null,"handoffRequestedAt":null,"lastActivityAt":"2026-11-21T10:00:00.123Z","createdAt":"2026-11-21T09:00:00.000Z","outcome":null`
	messageJSON = `{"id":"msg_1","role":"ASSISTANT","content":"Refunds take 30 days.","createdAt":"2026-11-21T10:00:00.123Z",
		"citations":[{"documentName":"Refund policy","sourceId":"src_1","sourceType":"text","url":null,"snippet":"30 days","score":0.82}]}`
)

func jsonAnswer(status int, body string) scripted {
	return scripted{status: status, contentType: "application/json", body: body,
		headers: map[string]string{"X-Request-Id": "req_123", "X-RateLimit-Limit": "600", "X-RateLimit-Remaining": "599", "X-RateLimit-Reset": "1"}}
}

func errorAnswer(status int, code string) scripted {
	return jsonAnswer(status, `{"error":{"code":"`+code+`","message":"something"}}`)
}

func TestValidateResponse(t *testing.T) {
	tooMany := errorAnswer(http.StatusTooManyRequests, "RATE_LIMITED")
	tooMany.headers["Retry-After"] = "3"
	tooManyNoRetry := errorAnswer(http.StatusTooManyRequests, "RATE_LIMITED")
	noRequestID := jsonAnswer(http.StatusOK, `{"data":[],"meta":{"nextCursor":null,"hasMore":false}}`)
	delete(noRequestID.headers, "X-Request-Id")
	deleted := jsonAnswer(http.StatusNoContent, "")
	deleted.contentType = ""
	stream := scripted{status: http.StatusOK, contentType: "text/event-stream", headers: map[string]string{"X-Request-Id": "r"},
		body: "id: msg_1:1\ndata: {\"type\":\"token\",\"content\":\"Hel\"}\n\n: ping\n\nid: msg_1:2\ndata: {\"type\":\"token\",\"content\":\"lo\"}\n\n" +
			"id: msg_1:3\ndata: {\"type\":\"done\",\"sessionId\":\"ses_1\",\"messageId\":\"msg_1\",\"message\":\"Hello\",\"citations\":[],\"isFallback\":false,\"fallbackReason\":null,\"offerHandoff\":false}\n\n"}
	badStream := stream
	badStream.body = "data: {\"type\":\"token\"}\n\n"

	tests := []struct {
		name   string
		method string
		path   string
		answer scripted
		valid  bool
	}{
		// Correct answers.
		{"agent list", "GET", "/api/v2/agents?limit=1", jsonAnswer(200, `{"data":[`+agentJSON+`],"meta":{"nextCursor":"abc","hasMore":true}}`), true},
		{"empty last page", "GET", "/api/v2/agents", jsonAnswer(200, `{"data":[],"meta":{"nextCursor":null,"hasMore":false}}`), true},
		{"created agent", "POST", "/api/v2/agents", jsonAnswer(201, agentJSON), true},
		{"text source", "POST", "/api/v2/agents/support/sources", jsonAnswer(201, `{"id":"src_1","agent":"support","type":"text","name":"Refunds","content":"30 days",
			"status":"READY","statusReason":null,"chunkCount":1,"tokenCount":3,"indexedAt":"2026-11-21T10:00:01.000Z","createdAt":"2026-11-21T10:00:00.123Z","updatedAt":"2026-11-21T10:00:00.123Z"}`), true},
		{"qa source", "POST", "/api/v2/agents/support/sources", jsonAnswer(201, `{"id":"src_2","agent":"support","type":"qa","name":"Refunds?","question":"Refunds?","answer":"30 days",
			"status":"READY","statusReason":null,"chunkCount":1,"tokenCount":3,"indexedAt":"2026-11-21T10:00:01.000Z","createdAt":"2026-11-21T10:00:00.123Z","updatedAt":"2026-11-21T10:00:00.123Z"}`), true},
		{"conversation list", "GET", "/api/v2/conversations?agent=support&status=AI", jsonAnswer(200, `{"data":[{`+conversationFields+`}],"meta":{"nextCursor":null,"hasMore":false}}`), true},
		{"conversation with messages", "GET", "/api/v2/conversations/ses_1", jsonAnswer(200, `{`+conversationFields+`,"messages":{"data":[`+messageJSON+`],"meta":{"nextCursor":null,"hasMore":false}}}`), true},
		{"deleted agent", "DELETE", "/api/v2/agents/support", deleted, true},
		{"not found", "GET", "/api/v2/agents/nope", errorAnswer(404, "NOT_FOUND"), true},
		{"validation error with details", "GET", "/api/v2/conversations?limit=0", jsonAnswer(400, `{"error":{"code":"VALIDATION_ERROR","message":"limit: must be between 1 and 100","details":{"limit":"must be between 1 and 100"}}}`), true},
		{"rate limited", "GET", "/api/v2/agents", tooMany, true},
		{"session", "POST", "/api/v1/sessions", jsonAnswer(200, `{"sessionId":"ses_1"}`), true},
		{"inbound accepted", "POST", "/api/webhooks/inbound", jsonAnswer(200, `{"received":true,"workspaceId":"ws_1","eventId":"evt_1"}`), true},
		{"health", "GET", "/healthz", jsonAnswer(200, `{"status":"ok"}`), true},
		{"not ready", "GET", "/readyz", jsonAnswer(503, `{"status":"unavailable","checks":{"postgres":"ok","redis":"unreachable"}}`), true},
		{"method not allowed on a documented path", "PUT", "/api/v2/agents", errorAnswer(405, "METHOD_NOT_ALLOWED"), true},
		{"chat stream", "POST", "/api/v2/chat", stream, true},
		{"charset parameter", "GET", "/healthz", scripted{status: 200, contentType: "application/json; charset=utf-8", headers: map[string]string{"X-Request-Id": "r"}, body: `{"status":"ok"}`}, true},

		// Wrong answers.
		{"list missing meta", "GET", "/api/v2/agents", jsonAnswer(200, `{"data":[`+agentJSON+`]}`), false},
		{"error missing code", "GET", "/api/v2/agents/nope", jsonAnswer(404, `{"error":{"message":"agent not found"}}`), false},
		{"error code of another status", "GET", "/api/v2/agents", errorAnswer(401, "NOT_FOUND"), false},
		{"unknown error code", "GET", "/api/v2/agents/nope", errorAnswer(404, "AGENT_MISSING"), false},
		{"hasMore without a cursor", "GET", "/api/v2/agents", jsonAnswer(200, `{"data":[],"meta":{"nextCursor":null,"hasMore":true}}`), false},
		{"cursor on the last page", "GET", "/api/v2/agents", jsonAnswer(200, `{"data":[],"meta":{"nextCursor":"abc","hasMore":false}}`), false},
		{"agent missing a field", "GET", "/api/v2/agents/support", jsonAnswer(200, strings.Replace(agentJSON, `"published":true,`, "", 1)), false},
		{"bad timestamp", "GET", "/api/v2/agents/support", jsonAnswer(200, strings.Replace(agentJSON, `"createdAt":"2026-11-21T10:00:00.123Z"`, `"createdAt":"yesterday"`, 1)), false},
		{"unknown conversation status", "GET", "/api/v2/conversations", jsonAnswer(200, `{"data":[{`+strings.Replace(conversationFields, `"status":"AI"`, `"status":"OPEN"`, 1)+`}],"meta":{"nextCursor":null,"hasMore":false}}`), false},
		{"conversation without messages", "GET", "/api/v2/conversations/ses_1", jsonAnswer(200, `{`+conversationFields+`}`), false},
		{"undocumented status", "GET", "/api/v2/agents", errorAnswer(418, "INTERNAL"), false},
		{"undocumented route", "GET", "/api/v3/agents", jsonAnswer(200, `{}`), false},
		{"undocumented method with 200", "PUT", "/api/v2/agents", jsonAnswer(200, `{}`), false},
		{"405 with wrong code", "PUT", "/api/v2/agents", errorAnswer(405, "NOT_FOUND"), false},
		{"missing X-Request-Id", "GET", "/api/v2/agents", noRequestID, false},
		{"429 without Retry-After", "GET", "/api/v2/agents", tooManyNoRetry, false},
		{"wrong content type", "GET", "/healthz", scripted{status: 200, contentType: "text/plain", headers: map[string]string{"X-Request-Id": "r"}, body: "ok"}, false},
		{"inbound without eventId", "POST", "/api/webhooks/inbound", jsonAnswer(200, `{"received":true,"workspaceId":"ws_1"}`), false},
		{"bad stream event", "POST", "/api/v2/chat", badStream, false},
	}

	var (
		mu      sync.Mutex
		answers = map[string]scripted{}
	)
	// A real server on 127.0.0.1:<random port> checks that routing ignores the
	// host, as it must for every test server.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := answers[r.Header.Get("X-Test-Case")]
		mu.Unlock()
		for k, v := range a.headers {
			w.Header().Set(k, v)
		}
		if a.contentType != "" {
			w.Header().Set("Content-Type", a.contentType)
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	defer srv.Close()

	v := openapitest.New(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			answers[tt.name] = tt.answer
			mu.Unlock()
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Test-Case", tt.name)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}

			rec := &recorder{TB: t}
			v.ValidateResponse(rec, req, resp, body)
			if tt.valid && len(rec.errors) > 0 {
				t.Errorf("a correct response was rejected:\n%s", strings.Join(rec.errors, "\n"))
			}
			if !tt.valid && len(rec.errors) == 0 {
				t.Errorf("a wrong response was accepted")
			}
		})
	}
}

// TestBodyOnNoContent builds the response by hand: net/http servers refuse to
// send a body with 204, but other stacks (and bugs) may.
func TestBodyOnNoContent(t *testing.T) {
	req := httptest.NewRequest(http.MethodDelete, "http://127.0.0.1:41234/api/v2/agents/support", nil)
	resp := &http.Response{StatusCode: http.StatusNoContent, Status: "204 No Content", Header: http.Header{"X-Request-Id": {"r"}}}
	v := openapitest.New(t)

	rec := &recorder{TB: t}
	v.ValidateResponse(rec, req, resp, nil)
	if len(rec.errors) > 0 {
		t.Errorf("an empty 204 was rejected: %v", rec.errors)
	}
	rec = &recorder{TB: t}
	v.ValidateResponse(rec, req, resp, []byte(`{"ok":true}`))
	if len(rec.errors) == 0 {
		t.Errorf("a 204 with a body was accepted")
	}
}

func TestNewIsReusable(t *testing.T) {
	// Many test packages call New; the document is loaded once and shared.
	a, b := openapitest.New(t), openapitest.New(t)
	if a == nil || b == nil {
		t.Fatal("New returned nil")
	}
}
