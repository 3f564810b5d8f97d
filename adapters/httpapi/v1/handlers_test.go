package v1_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/httpapitest"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/relay"
)

// Valid ids of each kind (26 characters of the id alphabet).
const (
	sessionID = "ses_00000000000000000000000001"
	messageID = "msg_00000000000000000000000001"
	replyID   = "msg_00000000000000000000000002"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func aConversation(status domain.ConversationStatus) domain.Conversation {
	return domain.Conversation{ID: sessionID, AgentSlug: "support", Channel: domain.ChannelChat, Status: status, LastActivityAt: now, CreatedAt: now}
}

func aMessage(id string, role domain.Role, content string) domain.Message {
	return domain.Message{ID: id, ConversationID: sessionID, Role: role, Content: content, CreatedAt: now}
}

// identity returns identity headers signed with the test principal's
// webhook secret, as a host application signs them.
func identity(userID string) map[string]string {
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"userId":"` + userID + `"}`))
	mac := hmac.New(sha256.New, []byte(httpapitest.Principal().Workspace.WebhookSecret))
	mac.Write([]byte(payload))
	return map[string]string{"X-Service-Identity": payload, "X-Service-Signature": hex.EncodeToString(mac.Sum(nil))}
}

func invalid(fields map[string]any) httpapitest.Want {
	return httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: fields}
}

func TestCreateSession(t *testing.T) {
	post := httpapitest.Request{Method: "POST", Path: "/api/v1/sessions", Body: `{"slug":"support"}`}
	signed := identity("u1")
	badSignature := identity("u1")
	badSignature["X-Service-Signature"] = hex.EncodeToString(make([]byte, 32))
	httpapitest.Run(t, "POST /api/v1/sessions", newApp, append(append([]httpapitest.Case{{
		Name:   "starts",
		Req:    post,
		Script: map[string]httpapitest.Result{"Sessions.StartSession": {Values: []any{aConversation(domain.StatusAI)}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"sessionId": sessionID}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			args := httpapitest.OnlyCall(t, s, "Sessions.StartSession")
			if args[0] != "ws_test" || args[1] != "support" || args[2].(*domain.Identity) != nil {
				t.Fatalf("StartSession(%v)", args)
			}
		},
	}, {
		Name:   "with no body, the first agent",
		Req:    httpapitest.Request{Method: "POST", Path: "/api/v1/sessions"},
		Script: map[string]httpapitest.Result{"Sessions.StartSession": {Values: []any{aConversation(domain.StatusAI)}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"sessionId": sessionID}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if args := httpapitest.OnlyCall(t, s, "Sessions.StartSession"); args[1] != "" {
				t.Fatalf("StartSession(%v)", args)
			}
		},
	}, {
		Name:   "for a verified user",
		Req:    httpapitest.Request{Method: "POST", Path: "/api/v1/sessions", Body: `{}`, Header: signed},
		Script: map[string]httpapitest.Result{"Sessions.StartSession": {Values: []any{aConversation(domain.StatusAI)}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"sessionId": sessionID}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if id := httpapitest.OnlyCall(t, s, "Sessions.StartSession")[2].(*domain.Identity); id == nil || id.UserID != "u1" {
				t.Fatalf("StartSession with identity %+v", id)
			}
		},
	}, {
		Name: "a bad identity signature",
		Req:  httpapitest.Request{Method: "POST", Path: "/api/v1/sessions", Body: `{}`, Header: badSignature},
		Want: httpapitest.Want{Status: 401, Code: domain.CodeUnauthorized, Fields: map[string]any{"error.message": "invalid identity signature"}},
	}, {
		Name: "one identity header alone",
		Req:  httpapitest.Request{Method: "POST", Path: "/api/v1/sessions", Body: `{}`, Header: map[string]string{"X-Service-Identity": signed["X-Service-Identity"]}},
		Want: invalid(map[string]any{"error.message": "X-Service-Identity and X-Service-Signature must be sent together"}),
	}, {
		Name: "slug too long",
		Req:  httpapitest.Request{Method: "POST", Path: "/api/v1/sessions", Body: `{"slug":"` + strings.Repeat("a", 65) + `"}`},
		Want: invalid(nil),
	}, {
		Name: "slug of the wrong type",
		Req:  httpapitest.Request{Method: "POST", Path: "/api/v1/sessions", Body: `{"slug":7}`},
		Want: invalid(map[string]any{"error.details.slug": "must be a string"}),
	}}, httpapitest.BadBodies("POST", "/api/v1/sessions")...), httpapitest.ErrorCases(post, "Sessions.StartSession", 404, 500, 503)...))
}

func TestMessage(t *testing.T) {
	path := "/api/chat/" + sessionID + "/message"
	answer := domain.Answer{SessionID: sessionID, UserMessage: aMessage(messageID, domain.RoleUser, "Where is my order?"),
		Reply: aMessage(replyID, domain.RoleAssistant, "On its way."), OfferHandoff: true}
	post := httpapitest.Request{Method: "POST", Path: path, Body: `{"message":"Where is my order?"}`,
		Header: map[string]string{"Idempotency-Key": "k1", "X-Service-Identity": "id", "X-Service-Signature": "sig"}}
	stream := httpapitest.Request{Method: "POST", Path: path, Body: `{"message":"Where is my order?","stream":true}`}
	silent := answer
	silent.Reply = domain.Message{}
	silent.OfferHandoff = false
	httpapitest.Run(t, "POST /api/chat/{sessionId}/message", newApp, append(append([]httpapitest.Case{{
		Name:   "answers",
		Req:    post,
		Script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Answer: answer}}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{"messages.0.id": messageID, "messages.0.role": "USER",
			"messages.1.id": replyID, "messages.1.content": "On its way.", "offerHandoff": true}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			req := httpapitest.OnlyCall(t, s, "Chat.Start")[0].(chat.Request)
			if req.Session.Workspace != nil || req.Session.ID != sessionID || req.Message != "Where is my order?" || req.IdempotencyKey != "k1" ||
				req.Session.IdentityHeader != "id" || req.Session.SignatureHeader != "sig" {
				t.Fatalf("Start(%+v)", req)
			}
		},
	}, {
		Name:   "no reply while a person owns the conversation",
		Req:    post,
		Script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Answer: silent}}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"messages.0.id": messageID, "messages.1": httpapitest.Absent, "offerHandoff": false}},
	}, {
		Name: "streams the question, then the answer",
		Req:  stream,
		Script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Answer: answer, Events: []domain.SessionEvent{
			{Type: domain.EventMessage, SessionID: sessionID, MessageID: messageID, Seq: 1, Message: &answer.UserMessage},
			{Type: domain.EventToken, SessionID: sessionID, MessageID: replyID, Seq: 1, Content: "On its way."},
			{Type: domain.EventDone, SessionID: sessionID, MessageID: replyID, Seq: 2, Answer: &answer},
		}}}}},
		Want: httpapitest.Want{Status: 200, Events: []string{"message", "token", "done"}, IDs: []string{messageID + ":1", replyID + ":1", replyID + ":2"}},
	}, {
		Name:   "the answer not stored",
		Req:    post,
		Script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Err: httpapitest.ErrUnavailable}}}},
		Want:   httpapitest.Want{Status: 503, Code: domain.CodeUnavailable},
	}, {
		Name: "a field in another case",
		Req:  httpapitest.Request{Method: "POST", Path: path, Body: `{"Message":"x"}`},
		Want: invalid(map[string]any{"error.details.Message": "is not a known field"}),
	}, {
		Name: "stream of the wrong type",
		Req:  httpapitest.Request{Method: "POST", Path: path, Body: `{"message":"x","stream":1}`},
		Want: invalid(map[string]any{"error.details.stream": "must be a boolean"}),
	}, {
		Name: "no body",
		Req:  httpapitest.Request{Method: "POST", Path: path},
		Want: invalid(map[string]any{"error.message": "request body is required"}),
	}}, httpapitest.BadBodies("POST", path)...), httpapitest.ErrorCases(post, "Chat.Start", 400, 401, 403, 404, 409, 500)...))

	// Errors before a stream starts are JSON error bodies.
	httpapitest.Run(t, "POST /api/chat/{sessionId}/message stream", newApp, httpapitest.ErrorCases(stream, "Chat.Start", 400, 404, 409))
}

func TestRequestHandoff(t *testing.T) {
	path := "/api/chat/" + sessionID + "/handoff"
	post := httpapitest.Request{Method: "POST", Path: path, Body: `{"name":"Ann","email":"ann@example.com","note":"call me"}`, Header: identity("u1")}
	httpapitest.Run(t, "POST /api/chat/{sessionId}/handoff", newApp, append(append([]httpapitest.Case{{
		Name:   "requests",
		Req:    post,
		Script: map[string]httpapitest.Result{"Handoffs.RequestHandoff": {Values: []any{aConversation(domain.StatusHandoffRequested)}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"sessionId": sessionID, "status": "HANDOFF_REQUESTED"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			req := httpapitest.OnlyCall(t, s, "Handoffs.RequestHandoff")[0].(handoff.Request)
			if req.Session.ID != sessionID || req.Session.IdentityHeader == "" || req.Session.SignatureHeader == "" || req.Name != "Ann" || req.Email != "ann@example.com" || req.Note != "call me" {
				t.Fatalf("RequestHandoff(%+v)", req)
			}
		},
	}, {
		Name:   "without a form",
		Req:    httpapitest.Request{Method: "POST", Path: path},
		Script: map[string]httpapitest.Result{"Handoffs.RequestHandoff": {Values: []any{aConversation(domain.StatusHandoffRequested)}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"status": "HANDOFF_REQUESTED"}},
	}, {
		Name: "email of the wrong type",
		Req:  httpapitest.Request{Method: "POST", Path: path, Body: `{"email":["a"]}`},
		Want: invalid(map[string]any{"error.details.email": "must be a string"}),
	}}, httpapitest.BadBodies("POST", path)...), httpapitest.ErrorCases(post, "Handoffs.RequestHandoff", 400, 401, 403, 404, 409, 500)...))
}

func TestPoll(t *testing.T) {
	path := "/api/chat/" + sessionID + "/poll"
	get := httpapitest.Request{Method: "GET", Path: path + "?after=" + messageID + "&limit=2"}
	result := conversation.PollResult{Conversation: aConversation(domain.StatusHuman), HasMore: true, Messages: []domain.Message{
		aMessage(replyID, domain.RoleHuman, "Hello, Ann here."),
	}}
	httpapitest.Run(t, "GET /api/chat/{sessionId}/poll", newApp, append([]httpapitest.Case{{
		Name:   "polls",
		Req:    get,
		Script: map[string]httpapitest.Result{"Handoffs.Poll": {Values: []any{result}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"sessionId": sessionID, "status": "HUMAN", "messages.0.role": "HUMAN", "hasMore": true}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			req := httpapitest.OnlyCall(t, s, "Handoffs.Poll")[0].(conversation.PollRequest)
			if req.Session.ID != sessionID || req.After != messageID || req.Limit != 2 {
				t.Fatalf("Poll(%+v)", req)
			}
		},
	}, {
		Name:   "nothing new",
		Req:    httpapitest.Request{Method: "GET", Path: path},
		Script: map[string]httpapitest.Result{"Handoffs.Poll": {Values: []any{conversation.PollResult{Conversation: aConversation(domain.StatusAI)}}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"messages": "[]", "hasMore": false}},
	}, {
		Name: "limit not a number",
		Req:  httpapitest.Request{Method: "GET", Path: path + "?limit=x"},
		Want: invalid(map[string]any{"error.details.limit": "must be between 1 and 100"}),
	}, {
		Name: "limit zero",
		Req:  httpapitest.Request{Method: "GET", Path: path + "?limit=0"},
		Want: invalid(map[string]any{"error.details.limit": "must be between 1 and 100"}),
	}}, httpapitest.ErrorCases(get, "Handoffs.Poll", 400, 401, 404, 500)...))
}

func TestEvents(t *testing.T) {
	path := "/api/chat/" + sessionID + "/events"
	follow := httpapitest.Request{Method: "GET", Path: path, Header: identity("u1")}
	msg := aMessage(replyID, domain.RoleHuman, "Hello")
	httpapitest.Run(t, "GET /api/chat/{sessionId}/events", newApp, append([]httpapitest.Case{{
		Name: "streams",
		Req:  follow,
		Script: map[string]httpapitest.Result{"Relay.Open": {Values: []any{&httpapitest.LiveStream{Events: []domain.SessionEvent{
			{Type: domain.EventMessage, SessionID: sessionID, MessageID: replyID, Seq: 1, Message: &msg},
		}}}}},
		Want: httpapitest.Want{Status: 200, Events: []string{"message"}, IDs: []string{replyID + ":1"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			req := httpapitest.OnlyCall(t, s, "Relay.Open")[0].(relay.Request)
			if req.Session.Workspace != nil || req.Session.ID != sessionID || req.Session.IdentityHeader == "" || req.Session.SignatureHeader == "" || req.LastEventID != "" {
				t.Fatalf("Open(%+v)", req)
			}
		},
	}, {
		Name:   "resumes after Last-Event-ID",
		Req:    httpapitest.Request{Method: "GET", Path: path, Header: map[string]string{"Last-Event-ID": replyID + ":1"}},
		Script: map[string]httpapitest.Result{"Relay.Open": {Values: []any{&httpapitest.LiveStream{Events: []domain.SessionEvent{{Type: domain.EventStatus, SessionID: sessionID, MessageID: replyID, Seq: 2, Status: domain.StatusHuman}}}}}},
		Want:   httpapitest.Want{Status: 200, Events: []string{"status"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if req := httpapitest.OnlyCall(t, s, "Relay.Open")[0].(relay.Request); req.LastEventID != replyID+":1" {
				t.Fatalf("Open(%+v)", req)
			}
		},
	}}, httpapitest.ErrorCases(follow, "Relay.Open", 400, 401, 404, 500, 503)...))
}

func TestRate(t *testing.T) {
	path := "/api/chat/" + sessionID + "/messages/" + replyID + "/feedback"
	post := httpapitest.Request{Method: "POST", Path: path, Body: `{"rating":"down","comment":"too slow"}`}
	rated := domain.Feedback{Rating: domain.RatingDown, Comment: "too slow", UpdatedAt: now}
	httpapitest.Run(t, "POST /api/chat/{sessionId}/messages/{messageId}/feedback", newApp, append(append([]httpapitest.Case{{
		Name:   "rates",
		Req:    post,
		Script: map[string]httpapitest.Result{"Ratings.Rate": {Values: []any{rated}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"messageId": replyID, "rating": "down", "comment": "too slow"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			req := httpapitest.OnlyCall(t, s, "Ratings.Rate")[0].(feedback.Request)
			if req.Session.ID != sessionID || req.MessageID != replyID || req.Rating != "down" || req.Comment != "too slow" {
				t.Fatalf("Rate(%+v)", req)
			}
		},
	}, {
		Name:   "null clears",
		Req:    httpapitest.Request{Method: "POST", Path: path, Body: `{"rating":null}`},
		Script: map[string]httpapitest.Result{"Ratings.Rate": {Values: []any{domain.Feedback{UpdatedAt: now}}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"rating": nil, "comment": ""}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if req := httpapitest.OnlyCall(t, s, "Ratings.Rate")[0].(feedback.Request); req.Rating != "" {
				t.Fatalf("Rate(%+v)", req)
			}
		},
	}, {
		Name: "rating missing",
		Req:  httpapitest.Request{Method: "POST", Path: path, Body: `{"comment":"x"}`},
		Want: invalid(map[string]any{"error.details.rating": "is required: up, down or null"}),
	}, {
		Name: "rating of the wrong type",
		Req:  httpapitest.Request{Method: "POST", Path: path, Body: `{"rating":5}`},
		Want: invalid(map[string]any{"error.details.rating": "must be up, down or null"}),
	}, {
		Name: "rating empty",
		Req:  httpapitest.Request{Method: "POST", Path: path, Body: `{"rating":""}`},
		Want: invalid(map[string]any{"error.details.rating": "must be up, down or null"}),
	}, {
		Name: "comment too long",
		Req:  httpapitest.Request{Method: "POST", Path: path, Body: `{"rating":"up","comment":"` + strings.Repeat("a", 1001) + `"}`},
		Want: invalid(nil),
	}, {
		Name: "no body",
		Req:  httpapitest.Request{Method: "POST", Path: path},
		Want: invalid(map[string]any{"error.message": "request body is required"}),
	}}, httpapitest.BadBodies("POST", path)...), httpapitest.ErrorCases(post, "Ratings.Rate", 400, 401, 404, 500)...))
}
