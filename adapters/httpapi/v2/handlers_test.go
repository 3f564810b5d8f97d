package v2_test

import (
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/httpapitest"
	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/relay"
	"github.com/conciergehq/concierge/ports"
)

// Valid ids of each kind (26 characters of the id alphabet).
const (
	agentID    = "agt_00000000000000000000000001"
	sourceID   = "src_00000000000000000000000001"
	sessionID  = "ses_00000000000000000000000001"
	messageID  = "msg_00000000000000000000000001"
	replyID    = "msg_00000000000000000000000002"
	deliveryID = "dlv_00000000000000000000000001"
	chunkID    = "chk_00000000000000000000000001"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func anAgent() domain.Agent {
	return domain.Agent{ID: agentID, Slug: "support", Name: "Support", Config: domain.AgentConfig{
		Published: true, RetrievalTopK: 5, RetrievalThreshold: 0.2, SuggestedQuestions: []string{"Shipping?"},
	}, CreatedAt: now, UpdatedAt: now}
}

func aSource() domain.Source {
	return domain.Source{ID: sourceID, Type: domain.SourceText, Name: "FAQ", Content: "We ship in 2 days.", Status: domain.SourcePending, CreatedAt: now, UpdatedAt: now}
}

func aConversation() domain.Conversation {
	return domain.Conversation{ID: sessionID, AgentSlug: "support", Channel: domain.ChannelChat, Status: domain.StatusAI,
		LastMessage: "Hi", MessageCount: 1, LastActivityAt: now, CreatedAt: now}
}

func aMessage(id string, role domain.Role, content string) domain.Message {
	return domain.Message{ID: id, ConversationID: sessionID, Role: role, Content: content, CreatedAt: now}
}

func aTrace() domain.RetrievalTrace {
	return domain.RetrievalTrace{Question: "shipping?", Query: "shipping", Method: "keyword", TopK: 5, Threshold: 0.2,
		Candidates: []domain.TraceCandidate{{ChunkID: chunkID, SourceID: sourceID, DocumentName: "FAQ", KeywordRank: 1, KeywordScore: 0.5, Score: 0.5, Kept: true, Reason: "kept"}}}
}

func aDelivery(status domain.DeliveryStatus) domain.Delivery {
	return domain.Delivery{ID: deliveryID, Target: domain.DeliveryTarget("events"), Type: "message.created", ConversationID: sessionID,
		Status: status, Attempts: 1, NextAttemptAt: now, CreatedAt: now}
}

func aWorkspace() domain.Workspace {
	return domain.Workspace{ID: "ws_test", EventsURL: "https://hooks.example/events", SigningSecret: "whsec_c2VjcmV0", UpdatedAt: now}
}

// Errors as the use cases return them; the ErrorHandler maps each to its
// documented status and code.
var (
	errInvalid     = domain.InvalidField("name", "is required")
	errNotFound    = domain.NotFound("agent")
	errConflict    = domain.Conflict("slug %q is taken", "support")
	errPlan        = &domain.PlanError{Feature: domain.FeatureHandoff, Plan: domain.PlanHobby}
	errUnavailable = domain.Unavailable("the store", errors.New("connection refused"))
	errBroken      = errors.New("a bug")
)

// errorCases are a use case's documented errors, answered through the one
// ErrorHandler, as cases for the route req; method is the scripted call.
func errorCases(req httpapitest.Request, method string, statuses ...int) []routeCase {
	byStatus := map[int]struct {
		err  error
		code string
	}{
		400: {errInvalid, domain.CodeValidation},
		403: {errPlan, domain.CodePlanUpgrade},
		404: {errNotFound, domain.CodeNotFound},
		409: {errConflict, domain.CodeConflict},
		500: {errBroken, domain.CodeInternal},
		503: {errUnavailable, domain.CodeUnavailable},
	}
	var out []routeCase
	for _, status := range statuses {
		e := byStatus[status]
		fields := map[string]any{"error.message": e.err.Error()}
		switch status {
		case 400:
			fields["error.details.name"] = "is required"
		case 403:
			fields["error.details.feature"] = string(domain.FeatureHandoff)
		case 500:
			fields["error.message"] = "internal error" // never the error's text
		case 503:
			fields["error.message"] = "a dependency is unavailable; retry later"
		}
		out = append(out, routeCase{
			name:   method + " fails with " + e.code,
			req:    req,
			script: map[string]httpapitest.Result{method: {Err: e.err}},
			want:   httpapitest.Want{Status: status, Code: e.code, Fields: fields},
		})
	}
	return out
}

// badBodies are the malformed bodies every JSON route refuses before its
// use case runs (no call is scripted, so a call would fail the status).
func badBodies(method, path string) []routeCase {
	req := func(body, contentType string) httpapitest.Request {
		return httpapitest.Request{Method: method, Path: path, Body: body, ContentType: contentType}
	}
	return []routeCase{
		{name: "malformed JSON", req: req(`{"a":`, ""), want: httpapitest.Want{Status: 400, Code: domain.CodeValidation}},
		{name: "unknown field", req: req(`{"nope":1}`, ""), want: httpapitest.Want{Status: 400, Code: domain.CodeValidation,
			Fields: map[string]any{"error.details.nope": "is not a known field"}}},
		{name: "not an object", req: req(`[1]`, ""), want: httpapitest.Want{Status: 400, Code: domain.CodeValidation,
			Fields: map[string]any{"error.message": "invalid JSON: the body must be a JSON object"}}},
		{name: "trailing data", req: req(`{}{}`, ""), want: httpapitest.Want{Status: 400, Code: domain.CodeValidation}},
		{name: "not JSON", req: req(`a=b`, "application/x-www-form-urlencoded"), want: httpapitest.Want{Status: 415, Code: "UNSUPPORTED_MEDIA_TYPE"}},
	}
}

// badPages are the bad limit and cursor parameters every list refuses.
func badPages(path string) []routeCase {
	get := func(query string) httpapitest.Request { return httpapitest.Request{Method: "GET", Path: path + query} }
	return []routeCase{
		{name: "limit not a number", req: get("?limit=ten"), want: httpapitest.Want{Status: 400, Code: domain.CodeValidation,
			Fields: map[string]any{"error.details.limit": "must be between 1 and 100"}}},
		{name: "limit out of range", req: get("?limit=101"), want: httpapitest.Want{Status: 400, Code: domain.CodeValidation,
			Fields: map[string]any{"error.details.limit": "must be between 1 and 100"}}},
		{name: "cursor not ours", req: get("?cursor=bm90LWEtY3Vyc29y"), want: httpapitest.Want{Status: 400, Code: domain.CodeValidation,
			Fields: map[string]any{"error.details.cursor": "is not a cursor issued by this API; pass meta.nextCursor unchanged"}}},
	}
}

type routeCase struct {
	name   string
	req    httpapitest.Request
	script map[string]httpapitest.Result
	want   httpapitest.Want
	// calls checks what the use cases were asked, when it matters.
	calls func(t *testing.T, s *httpapitest.Script)
}

func run(t *testing.T, route string, cases []routeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(route+"/"+tc.name, func(t *testing.T) {
			s := httpapitest.NewScript(tc.script)
			resp := newApp(t, s).Do(t, tc.req)
			resp.Check(t, tc.want)
			if tc.calls != nil {
				tc.calls(t, s)
			}
		})
	}
}

// onlyCall returns the arguments of method's one call.
func onlyCall(t *testing.T, s *httpapitest.Script, method string) []any {
	t.Helper()
	calls := s.Calls(method)
	if len(calls) != 1 {
		t.Fatalf("%s called %d times, want once", method, len(calls))
	}
	return calls[0]
}

func page[T any](items ...T) domain.Page[T] { return domain.Page[T]{Items: items} }

func TestAgents(t *testing.T) {
	list := httpapitest.Request{Method: "GET", Path: "/api/v2/agents"}
	run(t, "GET /agents", append([]routeCase{{
		name:   "lists",
		req:    list,
		script: map[string]httpapitest.Result{"Agents.List": {Values: []any{page(anAgent())}}},
		want: httpapitest.Want{Status: 200, Fields: map[string]any{
			"data.0.slug": "support", "data.0.widgetUrl": "https://concierge.example/chat/" + agentID,
			"data.0.model": nil, "meta.hasMore": false, "meta.nextCursor": nil,
		}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			if args := onlyCall(t, s, "Agents.List"); args[0] != "ws_test" || args[1].(domain.PageRequest).Limit != 20 {
				t.Fatalf("List(%v)", args)
			}
		},
	}, {
		name:   "with a limit",
		req:    httpapitest.Request{Method: "GET", Path: "/api/v2/agents?limit=1"},
		script: map[string]httpapitest.Result{"Agents.List": {Values: []any{domain.Page[domain.Agent]{Items: []domain.Agent{anAgent()}, HasMore: true, Next: &domain.Position{Time: now, ID: agentID}}}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"meta.hasMore": true}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			if args := onlyCall(t, s, "Agents.List"); args[1].(domain.PageRequest).Limit != 1 {
				t.Fatalf("List(%v)", args)
			}
		},
	}}, append(badPages("/api/v2/agents"), errorCases(list, "Agents.List", 500, 503)...)...))

	create := httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support","name":"Support","published":false,"retrievalThreshold":0.4}`}
	run(t, "POST /agents", append(append([]routeCase{{
		name:   "creates",
		req:    create,
		script: map[string]httpapitest.Result{"Agents.Create": {Values: []any{anAgent()}}},
		want:   httpapitest.Want{Status: 201, Fields: map[string]any{"slug": "support", "id": agentID}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			a := onlyCall(t, s, "Agents.Create")[1].(domain.Agent)
			if a.Slug != "support" || a.Config.Published || a.Config.RetrievalThreshold != 0.4 {
				t.Fatalf("Create(%+v)", a)
			}
		},
	}, {
		name:   "published and the threshold default",
		req:    httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support","name":"Support"}`},
		script: map[string]httpapitest.Result{"Agents.Create": {Values: []any{anAgent()}}},
		want:   httpapitest.Want{Status: 201, Fields: map[string]any{"slug": "support"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			a := onlyCall(t, s, "Agents.Create")[1].(domain.Agent)
			if !a.Config.Published || a.Config.RetrievalThreshold != domain.DefaultRetrievalThreshold {
				t.Fatalf("Create(%+v)", a.Config)
			}
		},
	}, {
		name: "missing name", req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support"}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.name": "is required"}},
	}, {
		name: "wrong type", req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support","name":"S","published":"yes"}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.published": "must be a boolean"}},
	}, {
		name: "out of range", req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support","name":"S","retrievalTopK":21}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.retrievalTopK": "must be at most 20 characters"}},
	}, {
		name: "empty body", req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents"},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.message": "request body is required"}},
	}}, badBodies("POST", "/api/v2/agents")...), errorCases(create, "Agents.Create", 400, 409, 500)...))

	get := httpapitest.Request{Method: "GET", Path: "/api/v2/agents/support"}
	run(t, "GET /agents/{slug}", append([]routeCase{{
		name:   "gets",
		req:    get,
		script: map[string]httpapitest.Result{"Agents.Get": {Values: []any{anAgent()}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"slug": "support", "suggestedQuestions.0": "Shipping?", "blockedTopics": "[]"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			if args := onlyCall(t, s, "Agents.Get"); args[1] != "support" {
				t.Fatalf("Get(%v)", args)
			}
		},
	}}, errorCases(get, "Agents.Get", 404, 500)...))

	update := httpapitest.Request{Method: "PATCH", Path: "/api/v2/agents/support", Body: `{"name":"Help","published":false}`}
	run(t, "PATCH /agents/{slug}", append(append([]routeCase{{
		name:   "updates the fields sent",
		req:    update,
		script: map[string]httpapitest.Result{"Agents.Update": {Values: []any{anAgent()}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"slug": "support"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			p := onlyCall(t, s, "Agents.Update")[2].(agent.Patch)
			if p.Name == nil || *p.Name != "Help" || p.Published == nil || *p.Published || p.SystemPrompt != nil {
				t.Fatalf("Update(%+v)", p)
			}
		},
	}, {
		name: "empty name", req: httpapitest.Request{Method: "PATCH", Path: "/api/v2/agents/support", Body: `{"name":""}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.name": "must be at least 1 characters"}},
	}}, badBodies("PATCH", "/api/v2/agents/support")...), errorCases(update, "Agents.Update", 400, 404, 500)...))

	del := httpapitest.Request{Method: "DELETE", Path: "/api/v2/agents/support"}
	run(t, "DELETE /agents/{slug}", append([]routeCase{{
		name:   "deletes",
		req:    del,
		script: map[string]httpapitest.Result{"Agents.Delete": {}},
		want:   httpapitest.Want{Status: 204},
	}}, errorCases(del, "Agents.Delete", 404, 500)...))
}

func TestSources(t *testing.T) {
	const path = "/api/v2/agents/support/sources"
	create := httpapitest.Request{Method: "POST", Path: path, Body: `{"type":"text","name":"FAQ","content":"We ship in 2 days."}`}
	upload, uploadType := httpapitest.Multipart(map[string]string{"type": "file", "name": "Manual"}, "manual.txt", []byte("Press the button."))
	run(t, "POST /agents/{slug}/sources", append(append([]routeCase{{
		name:   "creates",
		req:    create,
		script: map[string]httpapitest.Result{"Sources.AddSource": {Values: []any{aSource()}}},
		want:   httpapitest.Want{Status: 201, Fields: map[string]any{"id": sourceID, "agent": "support", "content": "We ship in 2 days.", "status": "PENDING"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			src := onlyCall(t, s, "Sources.AddSource")[2].(domain.Source)
			if src.Type != domain.SourceText || src.Content != "We ship in 2 days." {
				t.Fatalf("AddSource(%+v)", src)
			}
		},
	}, {
		name:   "uploads a file",
		req:    httpapitest.Request{Method: "POST", Path: path, Body: upload, ContentType: uploadType},
		script: map[string]httpapitest.Result{"Sources.AddSource": {Values: []any{domain.Source{ID: sourceID, Type: domain.SourceFile, Name: "Manual", Filename: "manual.txt", Status: domain.SourcePending, CreatedAt: now, UpdatedAt: now}}}},
		want:   httpapitest.Want{Status: 201, Fields: map[string]any{"filename": "manual.txt", "type": "file"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			src := onlyCall(t, s, "Sources.AddSource")[2].(domain.Source)
			if src.Type != domain.SourceFile || src.Name != "Manual" || string(src.File) != "Press the button." {
				t.Fatalf("AddSource(%+v)", src)
			}
		},
	}, {
		name: "a file as JSON", req: httpapitest.Request{Method: "POST", Path: path, Body: `{"type":"file"}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.file": "upload files as multipart/form-data with the fields type=file, name (optional) and file"}},
	}, {
		name: "unknown type", req: httpapitest.Request{Method: "POST", Path: path, Body: `{"type":"pdf"}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.type": "must be one of text, qa, file, url, website"}},
	}, {
		name: "missing type", req: httpapitest.Request{Method: "POST", Path: path, Body: `{"name":"x"}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.type": "is required"}},
	}, {
		name: "multipart without a boundary", req: httpapitest.Request{Method: "POST", Path: path, Body: "x", ContentType: "multipart/form-data"},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.message": "invalid multipart/form-data body"}},
	}}, badBodies("POST", path)...), errorCases(create, "Sources.AddSource", 400, 403, 404, 500)...))

	list := httpapitest.Request{Method: "GET", Path: path}
	run(t, "GET /agents/{slug}/sources", append(append([]routeCase{{
		name:   "lists",
		req:    list,
		script: map[string]httpapitest.Result{"Sources.ListSources": {Values: []any{page(aSource())}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.id": sourceID, "data.0.agent": "support", "meta.hasMore": false}},
	}}, badPages(path)...), errorCases(list, "Sources.ListSources", 404, 500)...))

	get := httpapitest.Request{Method: "GET", Path: path + "/" + sourceID}
	run(t, "GET /agents/{slug}/sources/{id}", append([]routeCase{{
		name:   "gets",
		req:    get,
		script: map[string]httpapitest.Result{"Sources.GetSource": {Values: []any{aSource()}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"id": sourceID, "indexedAt": nil}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			if args := onlyCall(t, s, "Sources.GetSource"); args[1] != "support" || args[2] != sourceID {
				t.Fatalf("GetSource(%v)", args)
			}
		},
	}}, errorCases(get, "Sources.GetSource", 404, 500)...))

	reindex := httpapitest.Request{Method: "POST", Path: path + "/" + sourceID + "/reindex"}
	run(t, "POST /agents/{slug}/sources/{id}/reindex", append([]routeCase{{
		name:   "schedules",
		req:    reindex,
		script: map[string]httpapitest.Result{"Sources.Reindex": {Values: []any{aSource()}}},
		want:   httpapitest.Want{Status: 202, Fields: map[string]any{"id": sourceID, "status": "PENDING"}},
	}}, errorCases(reindex, "Sources.Reindex", 404, 500)...))

	del := httpapitest.Request{Method: "DELETE", Path: path + "/" + sourceID}
	run(t, "DELETE /agents/{slug}/sources/{id}", append([]routeCase{{
		name:   "deletes",
		req:    del,
		script: map[string]httpapitest.Result{"Sources.DeleteSource": {}},
		want:   httpapitest.Want{Status: 204},
	}}, errorCases(del, "Sources.DeleteSource", 404, 500)...))
}

func TestConversations(t *testing.T) {
	list := httpapitest.Request{Method: "GET", Path: "/api/v2/conversations?agent=support&status=AI"}
	run(t, "GET /conversations", append(append([]routeCase{{
		name:   "lists with filters",
		req:    list,
		script: map[string]httpapitest.Result{"Conversations.List": {Values: []any{page(aConversation())}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.id": sessionID, "data.0.agent": "support", "data.0.contactName": nil}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			f := onlyCall(t, s, "Conversations.List")[1].(conversation.ListFilter)
			if f.AgentSlug != "support" || f.Status != domain.StatusAI {
				t.Fatalf("List(%+v)", f)
			}
		},
	}}, badPages("/api/v2/conversations")...), errorCases(list, "Conversations.List", 400, 404, 500)...))

	get := httpapitest.Request{Method: "GET", Path: "/api/v2/conversations/" + sessionID}
	run(t, "GET /conversations/{id}", append(append([]routeCase{{
		name: "gets with its messages",
		req:  get,
		script: map[string]httpapitest.Result{"Conversations.Get": {Values: []any{aConversation(),
			page(aMessage(messageID, domain.RoleUser, "Hi"), aMessage(replyID, domain.RoleAssistant, "Hello"))}}},
		want: httpapitest.Want{Status: 200, Fields: map[string]any{"id": sessionID, "messages.data.0.role": "USER", "messages.data.1.content": "Hello", "messages.meta.hasMore": false}},
	}}, badPages("/api/v2/conversations/"+sessionID)...), errorCases(get, "Conversations.Get", 404, 500)...))

	trace := httpapitest.Request{Method: "GET", Path: "/api/v2/conversations/" + sessionID + "/messages/" + replyID + "/trace"}
	run(t, "GET /conversations/{id}/messages/{messageId}/trace", append([]routeCase{{
		name:   "gets",
		req:    trace,
		script: map[string]httpapitest.Result{"Conversations.MessageTrace": {Values: []any{aTrace()}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"query": "shipping", "candidates.0.keywordRank": 1, "candidates.0.vectorRank": nil, "candidates.0.relevance": nil, "answerability": nil}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			if args := onlyCall(t, s, "Conversations.MessageTrace"); args[1] != sessionID || args[2] != replyID {
				t.Fatalf("MessageTrace(%v)", args)
			}
		},
	}}, errorCases(trace, "Conversations.MessageTrace", 404, 500)...))
}

func TestChat(t *testing.T) {
	answer := domain.Answer{SessionID: sessionID, UserMessage: aMessage(messageID, domain.RoleUser, "Shipping?"),
		Reply: aMessage(replyID, domain.RoleAssistant, "Two days.")}
	body := `{"agent":"support","message":"Shipping?"}`
	post := httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: body, Header: map[string]string{"Idempotency-Key": "k1", "X-Service-Identity": "id", "X-Service-Signature": "sig"}}
	stream := httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: `{"agent":"support","message":"Shipping?","stream":true}`}
	done := answer
	run(t, "POST /chat", append(append([]routeCase{{
		name:   "answers",
		req:    post,
		script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Answer: answer}}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"sessionId": sessionID, "messageId": replyID, "message": "Two days.", "isFallback": false, "fallbackReason": nil}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			req := onlyCall(t, s, "Chat.Start")[0].(chat.Request)
			if req.Workspace == nil || req.Workspace.ID != "ws_test" || req.AgentSlug != "support" || req.Message != "Shipping?" ||
				req.IdempotencyKey != "k1" || req.IdentityHeader != "id" || req.SignatureHeader != "sig" {
				t.Fatalf("Start(%+v)", req)
			}
		},
	}, {
		name: "streams",
		req:  stream,
		script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Answer: answer, Events: []ports.SessionEvent{
			{Type: ports.EventMessage, SessionID: sessionID, MessageID: messageID, Seq: 1, Message: &answer.UserMessage},
			{Type: ports.EventToken, SessionID: sessionID, MessageID: replyID, Seq: 1, Content: "Two "},
			{Type: ports.EventToken, SessionID: sessionID, MessageID: replyID, Seq: 2, Content: "days."},
			{Type: ports.EventDone, SessionID: sessionID, MessageID: replyID, Seq: 3, Answer: &done},
		}}}}},
		// The POST stream of v2 carries the answer only, not the question.
		want: httpapitest.Want{Status: 200, Events: []string{"token", "token", "done"}},
	}, {
		name: "a stream whose answer was not stored ends with an error event",
		req:  stream,
		script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Err: errUnavailable, Events: []ports.SessionEvent{
			{Type: ports.EventToken, SessionID: sessionID, MessageID: replyID, Seq: 1, Content: "Two "},
		}}}}},
		want: httpapitest.Want{Status: 200, Events: []string{"token", "error"}},
	}, {
		name:   "the answer not stored",
		req:    post,
		script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Err: errUnavailable}}}},
		want:   httpapitest.Want{Status: 503, Code: domain.CodeUnavailable},
	}, {
		name: "wrong type", req: httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: `{"message":"x","stream":"yes"}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.stream": "must be a boolean"}},
	}, {
		name: "a session id too long", req: httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: `{"message":"x","sessionId":"ses_0000000000000000000000000000000000000000000000000000000000000000"}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.sessionId": "must be at most 64 characters"}},
	}, {
		name: "an Idempotency-Key with a NUL", req: httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: body, Header: map[string]string{"Idempotency-Key": "a\x00b"}},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation},
	}}, badBodies("POST", "/api/v2/chat")...), errorCases(post, "Chat.Start", 400, 403, 404, 409, 500)...))

	// Errors before a stream starts are JSON error bodies.
	run(t, "POST /chat stream", errorCases(stream, "Chat.Start", 400, 404, 409))

	retrieve := httpapitest.Request{Method: "POST", Path: "/api/v2/agents/support/retrieve", Body: `{"query":"shipping","topK":3,"threshold":0.5}`}
	run(t, "POST /agents/{slug}/retrieve", append(append([]routeCase{{
		name: "retrieves",
		req:  retrieve,
		script: map[string]httpapitest.Result{"Retrieval.Retrieve": {Values: []any{
			[]domain.Chunk{{ID: chunkID, SourceID: sourceID, SourceType: domain.SourceText, DocumentName: "FAQ", Text: "We ship in 2 days.", Score: 0.5}}, aTrace()}}},
		want: httpapitest.Want{Status: 200, Fields: map[string]any{"query": "shipping", "results.0.chunkId": chunkID, "results.0.url": nil, "trace.method": "keyword"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			req := onlyCall(t, s, "Retrieval.Retrieve")[0].(chat.RetrieveRequest)
			if req.WorkspaceID != "ws_test" || req.AgentSlug != "support" || req.TopK != 3 || req.Threshold == nil || *req.Threshold != 0.5 {
				t.Fatalf("Retrieve(%+v)", req)
			}
		},
	}, {
		name: "topK out of range", req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents/support/retrieve", Body: `{"query":"q","topK":51}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.topK": "must be at most 50 characters"}},
	}, {
		name: "threshold out of range", req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents/support/retrieve", Body: `{"query":"q","threshold":2}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.threshold": "must be at most 1 characters"}},
	}}, badBodies("POST", "/api/v2/agents/support/retrieve")...), errorCases(retrieve, "Retrieval.Retrieve", 400, 404, 500)...))
}

func TestHandoff(t *testing.T) {
	post := httpapitest.Request{Method: "POST", Path: "/api/v2/conversations/" + sessionID + "/messages", Body: `{"role":"HUMAN","content":"I can help.","authorName":"Ann"}`}
	reply := aMessage(replyID, domain.RoleHuman, "I can help.")
	reply.AuthorName = "Ann"
	run(t, "POST /conversations/{id}/messages", append(append([]routeCase{{
		name:   "posts",
		req:    post,
		script: map[string]httpapitest.Result{"HumanReplies.PostHumanMessage": {Values: []any{reply}}},
		want:   httpapitest.Want{Status: 201, Fields: map[string]any{"id": replyID, "role": "HUMAN", "content": "I can help."}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			args := onlyCall(t, s, "HumanReplies.PostHumanMessage")
			if m := args[2].(handoff.HumanMessage); args[0] != "ws_test" || args[1] != sessionID || m.Role != "HUMAN" || m.AuthorName != "Ann" {
				t.Fatalf("PostHumanMessage(%v)", args)
			}
		},
	}}, badBodies("POST", "/api/v2/conversations/"+sessionID+"/messages")...), errorCases(post, "HumanReplies.PostHumanMessage", 400, 404, 409, 500)...))

	status := httpapitest.Request{Method: "POST", Path: "/api/v2/conversations/" + sessionID + "/status", Body: `{"status":"RESOLVED"}`}
	resolved := aConversation()
	resolved.Status = domain.StatusResolved
	run(t, "POST /conversations/{id}/status", append(append([]routeCase{{
		name:   "moves",
		req:    status,
		script: map[string]httpapitest.Result{"HumanReplies.SetStatus": {Values: []any{resolved}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"id": sessionID, "status": "RESOLVED"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			if args := onlyCall(t, s, "HumanReplies.SetStatus"); args[2] != domain.StatusResolved {
				t.Fatalf("SetStatus(%v)", args)
			}
		},
	}, {
		name: "wrong type", req: httpapitest.Request{Method: "POST", Path: status.Path, Body: `{"status":1}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.status": "must be a string"}},
	}}, badBodies("POST", status.Path)...), errorCases(status, "HumanReplies.SetStatus", 400, 404, 409, 500)...))
}

func TestIntegrations(t *testing.T) {
	get := httpapitest.Request{Method: "GET", Path: "/api/v2/integrations"}
	run(t, "GET /integrations", append([]routeCase{{
		name:   "gets without the secret",
		req:    get,
		script: map[string]httpapitest.Result{"Integrations.Integrations": {Values: []any{aWorkspace()}}},
		want: httpapitest.Want{Status: 200, Fields: map[string]any{"helpdesk": "inbox", "helpdeskUrl": nil, "eventsUrl": "https://hooks.example/events",
			"signingSecretSet": true, "signingSecret": httpapitest.Absent}},
	}}, errorCases(get, "Integrations.Integrations", 500, 503)...))

	update := httpapitest.Request{Method: "PATCH", Path: "/api/v2/integrations", Body: `{"helpdeskUrl":"https://desk.example/hook","eventsUrl":""}`}
	withDesk := aWorkspace()
	withDesk.HelpdeskURL = "https://desk.example/hook"
	run(t, "PATCH /integrations", append(append([]routeCase{{
		name:   "updates and shows a new secret once",
		req:    update,
		script: map[string]httpapitest.Result{"Integrations.SetIntegrations": {Values: []any{withDesk, "whsec_bmV3"}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"helpdesk": "webhook", "signingSecret": "whsec_bmV3"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			ch := onlyCall(t, s, "Integrations.SetIntegrations")[1].(delivery.IntegrationsChange)
			if ch.HelpdeskURL == nil || *ch.HelpdeskURL != "https://desk.example/hook" || ch.EventsURL == nil || *ch.EventsURL != "" {
				t.Fatalf("SetIntegrations(%+v)", ch)
			}
		},
	}, {
		name:   "updates without a new secret",
		req:    httpapitest.Request{Method: "PATCH", Path: "/api/v2/integrations", Body: `{}`},
		script: map[string]httpapitest.Result{"Integrations.SetIntegrations": {Values: []any{aWorkspace(), ""}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"signingSecret": httpapitest.Absent}},
	}, {
		name: "wrong type", req: httpapitest.Request{Method: "PATCH", Path: "/api/v2/integrations", Body: `{"eventsUrl":true}`},
		want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.eventsUrl": "must be a string"}},
	}}, badBodies("PATCH", "/api/v2/integrations")...), errorCases(update, "Integrations.SetIntegrations", 400, 403, 500)...))

	rotate := httpapitest.Request{Method: "POST", Path: "/api/v2/integrations/signing-secret"}
	run(t, "POST /integrations/signing-secret", append([]routeCase{{
		name:   "rotates",
		req:    rotate,
		script: map[string]httpapitest.Result{"Integrations.RotateSigningSecret": {Values: []any{aWorkspace()}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"signingSecret": "whsec_c2VjcmV0"}},
	}}, errorCases(rotate, "Integrations.RotateSigningSecret", 500, 503)...))
}

func TestDeliveries(t *testing.T) {
	list := httpapitest.Request{Method: "GET", Path: "/api/v2/deliveries?target=events&status=FAILED&type=message.created"}
	run(t, "GET /deliveries", append(append([]routeCase{{
		name:   "lists with filters",
		req:    list,
		script: map[string]httpapitest.Result{"DeliveryLog.List": {Values: []any{page(aDelivery(domain.DeliveryPending))}}},
		want:   httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.id": deliveryID, "data.0.nextAttemptAt": "2026-11-27T12:00:00.000Z", "data.0.deliveredAt": nil}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			f := onlyCall(t, s, "DeliveryLog.List")[1].(domain.DeliveryFilter)
			if f.Target != "events" || f.Status != domain.DeliveryFailed || f.Type != "message.created" {
				t.Fatalf("List(%+v)", f)
			}
		},
	}}, badPages("/api/v2/deliveries")...), errorCases(list, "DeliveryLog.List", 400, 500)...))

	get := httpapitest.Request{Method: "GET", Path: "/api/v2/deliveries/" + deliveryID}
	run(t, "GET /deliveries/{id}", append([]routeCase{{
		name: "gets with its attempts",
		req:  get,
		script: map[string]httpapitest.Result{"DeliveryLog.Get": {Values: []any{aDelivery(domain.DeliveryFailed),
			[]domain.DeliveryAttempt{{Attempt: 1, At: now, StatusCode: 500, Error: "HTTP 500", Duration: 120 * time.Millisecond}, {Attempt: 2, At: now, Error: "timeout"}}}}},
		want: httpapitest.Want{Status: 200, Fields: map[string]any{"id": deliveryID, "nextAttemptAt": nil, "log.0.statusCode": 500, "log.0.durationMs": 120, "log.1.statusCode": nil}},
	}}, errorCases(get, "DeliveryLog.Get", 404, 500)...))

	retry := httpapitest.Request{Method: "POST", Path: "/api/v2/deliveries/" + deliveryID + "/retry"}
	run(t, "POST /deliveries/{id}/retry", append([]routeCase{{
		name:   "retries",
		req:    retry,
		script: map[string]httpapitest.Result{"DeliveryLog.Retry": {Values: []any{aDelivery(domain.DeliveryPending)}}},
		want:   httpapitest.Want{Status: 202, Fields: map[string]any{"id": deliveryID, "status": "PENDING"}},
	}}, errorCases(retry, "DeliveryLog.Retry", 404, 409, 500)...))
}

func TestEvents(t *testing.T) {
	follow := httpapitest.Request{Method: "GET", Path: "/api/v2/conversations/" + sessionID + "/events", Header: map[string]string{"Last-Event-ID": messageID + ":1"}}
	msg := aMessage(replyID, domain.RoleHuman, "I can help.")
	run(t, "GET /conversations/{id}/events", append([]routeCase{{
		name: "streams",
		req:  follow,
		script: map[string]httpapitest.Result{"Relay.Open": {Values: []any{&httpapitest.LiveStream{Events: []ports.SessionEvent{
			{Type: ports.EventMessage, SessionID: sessionID, MessageID: replyID, Seq: 1, Message: &msg},
			{Type: ports.EventStatus, SessionID: sessionID, MessageID: replyID, Seq: 2, Status: domain.StatusHuman},
		}}}}},
		want: httpapitest.Want{Status: 200, Events: []string{"message", "status"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			req := onlyCall(t, s, "Relay.Open")[0].(relay.Request)
			if req.Workspace == nil || req.Workspace.ID != "ws_test" || req.SessionID != sessionID || req.LastEventID != messageID+":1" {
				t.Fatalf("Open(%+v)", req)
			}
		},
	}, {
		name:   "resumes after the lastEventId parameter",
		req:    httpapitest.Request{Method: "GET", Path: "/api/v2/conversations/" + sessionID + "/events?lastEventId=" + messageID + ":2"},
		script: map[string]httpapitest.Result{"Relay.Open": {Values: []any{&httpapitest.LiveStream{Events: []ports.SessionEvent{{Type: ports.EventStatus, SessionID: sessionID, MessageID: replyID, Seq: 3, Status: domain.StatusResolved}}}}}},
		want:   httpapitest.Want{Status: 200, Events: []string{"status"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			if req := onlyCall(t, s, "Relay.Open")[0].(relay.Request); req.LastEventID != messageID+":2" {
				t.Fatalf("Open(%+v)", req)
			}
		},
	}}, errorCases(follow, "Relay.Open", 400, 404, 500, 503)...))
}

func TestFeedbackList(t *testing.T) {
	list := httpapitest.Request{Method: "GET", Path: "/api/v2/feedback?agent=support&rating=down"}
	run(t, "GET /feedback", append(append([]routeCase{{
		name: "lists",
		req:  list,
		script: map[string]httpapitest.Result{"RatedAnswers.List": {Values: []any{page(domain.RatedAnswer{MessageID: replyID, ConversationID: sessionID, AgentSlug: "support",
			Content: "Two days.", Feedback: domain.Feedback{Rating: domain.RatingDown, Comment: "too slow", UpdatedAt: now}})}}},
		want: httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.messageId": replyID, "data.0.rating": "down", "data.0.comment": "too slow"}},
		calls: func(t *testing.T, s *httpapitest.Script) {
			if f := onlyCall(t, s, "RatedAnswers.List")[1].(feedback.ListFilter); f.AgentSlug != "support" || f.Rating != "down" {
				t.Fatalf("List(%+v)", f)
			}
		},
	}}, badPages("/api/v2/feedback")...), errorCases(list, "RatedAnswers.List", 400, 404, 500)...))
}
