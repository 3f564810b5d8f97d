package v2_test

import (
	"net/url"
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

// handedOff is aConversation after a handoff request that gave a name
// and a note.
func handedOff() domain.Conversation {
	c := aConversation()
	c.Status, c.ContactName, c.ContactNote = domain.StatusHandoffRequested, "Ada", "Call me after 5pm <b>please</b>"
	c.HandoffRequestedAt = now.Add(-5 * time.Minute)
	return c
}

func aMessage(id string, role domain.Role, content string) domain.Message {
	return domain.Message{ID: id, ConversationID: sessionID, Role: role, Content: content, CreatedAt: now}
}

func aTrace() domain.RetrievalTrace {
	return domain.RetrievalTrace{Question: "shipping?", Query: "shipping", Method: "keyword", TopK: 5, Threshold: 0.2,
		Candidates: []domain.TraceCandidate{{ChunkID: chunkID, SourceID: sourceID, DocumentName: "FAQ", KeywordRank: 1, KeywordScore: 0.5, Score: 0.5, Kept: true, Reason: "kept"}}}
}

// rerankedTrace is aTrace as the reranker decided it: a fallback, with
// the answerability's features.
func rerankedTrace(names []string, features []float64) domain.RetrievalTrace {
	t := aTrace()
	t.Method, t.Answerability, t.Verdict = "hybrid", 0.21, domain.VerdictNotAnswerable
	t.AnswerFeatureNames, t.AnswerFeatures = names, features
	return t
}

func aDelivery(status domain.DeliveryStatus) domain.Delivery {
	return domain.Delivery{ID: deliveryID, Target: domain.DeliveryTarget("events"), Type: "message.created", ConversationID: sessionID,
		Status: status, Attempts: 1, NextAttemptAt: now, CreatedAt: now}
}

func aWorkspace() domain.Workspace {
	return domain.Workspace{ID: "ws_test", EventsURL: "https://hooks.example/events", SigningSecret: "whsec_c2VjcmV0", UpdatedAt: now}
}

func page[T any](items ...T) domain.Page[T] { return domain.Page[T]{Items: items} }

func TestAgents(t *testing.T) {
	list := httpapitest.Request{Method: "GET", Path: "/api/v2/agents"}
	httpapitest.Run(t, "GET /agents", newApp, append([]httpapitest.Case{{
		Name:   "lists",
		Req:    list,
		Script: map[string]httpapitest.Result{"Agents.List": {Values: []any{page(anAgent())}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{
			"data.0.slug": "support", "data.0.widgetUrl": "https://concierge.example/chat/" + agentID,
			"data.0.model": nil, "meta.hasMore": false, "meta.nextCursor": nil,
		}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if args := httpapitest.OnlyCall(t, s, "Agents.List"); args[0] != "ws_test" || args[1].(domain.PageRequest).Limit != 20 {
				t.Fatalf("List(%v)", args)
			}
		},
	}, {
		Name:   "with a limit",
		Req:    httpapitest.Request{Method: "GET", Path: "/api/v2/agents?limit=1"},
		Script: map[string]httpapitest.Result{"Agents.List": {Values: []any{domain.Page[domain.Agent]{Items: []domain.Agent{anAgent()}, HasMore: true, Next: &domain.Position{Time: now, ID: agentID}}}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"meta.hasMore": true}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if args := httpapitest.OnlyCall(t, s, "Agents.List"); args[1].(domain.PageRequest).Limit != 1 {
				t.Fatalf("List(%v)", args)
			}
		},
	}}, append(httpapitest.BadPages("/api/v2/agents"), httpapitest.ErrorCases(list, "Agents.List", 500, 503)...)...))

	create := httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support","name":"Support","published":false,"retrievalThreshold":0.4}`}
	httpapitest.Run(t, "POST /agents", newApp, append(append([]httpapitest.Case{{
		Name:   "creates",
		Req:    create,
		Script: map[string]httpapitest.Result{"Agents.Create": {Values: []any{anAgent()}}},
		Want:   httpapitest.Want{Status: 201, Fields: map[string]any{"slug": "support", "id": agentID}, Header: map[string]string{"Location": "/api/v2/agents/support"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			a := httpapitest.OnlyCall(t, s, "Agents.Create")[1].(domain.Agent)
			if a.Slug != "support" || a.Config.Published || a.Config.RetrievalThreshold != 0.4 {
				t.Fatalf("Create(%+v)", a)
			}
		},
	}, {
		Name:   "published and the threshold default",
		Req:    httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support","name":"Support"}`},
		Script: map[string]httpapitest.Result{"Agents.Create": {Values: []any{anAgent()}}},
		Want:   httpapitest.Want{Status: 201, Fields: map[string]any{"slug": "support"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			a := httpapitest.OnlyCall(t, s, "Agents.Create")[1].(domain.Agent)
			if !a.Config.Published || a.Config.RetrievalThreshold != domain.DefaultRetrievalThreshold {
				t.Fatalf("Create(%+v)", a.Config)
			}
		},
	}, {
		Name: "missing name", Req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support"}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.name": "is required"}},
	}, {
		Name: "wrong type", Req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support","name":"S","published":"yes"}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.published": "must be a boolean"}},
	}, {
		Name: "out of range", Req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents", Body: `{"slug":"support","name":"S","retrievalTopK":21}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.retrievalTopK": "must be at most 20"}},
	}, {
		Name: "empty body", Req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents"},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.message": "request body is required"}},
	}}, httpapitest.BadBodies("POST", "/api/v2/agents")...), httpapitest.ErrorCases(create, "Agents.Create", 400, 409, 500)...))

	get := httpapitest.Request{Method: "GET", Path: "/api/v2/agents/support"}
	httpapitest.Run(t, "GET /agents/{slug}", newApp, append([]httpapitest.Case{{
		Name:   "gets",
		Req:    get,
		Script: map[string]httpapitest.Result{"Agents.Get": {Values: []any{anAgent()}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"slug": "support", "suggestedQuestions.0": "Shipping?", "blockedTopics": "[]"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if args := httpapitest.OnlyCall(t, s, "Agents.Get"); args[1] != "support" {
				t.Fatalf("Get(%v)", args)
			}
		},
	}}, httpapitest.ErrorCases(get, "Agents.Get", 404, 500)...))

	update := httpapitest.Request{Method: "PATCH", Path: "/api/v2/agents/support", Body: `{"name":"Help","published":false}`}
	httpapitest.Run(t, "PATCH /agents/{slug}", newApp, append(append([]httpapitest.Case{{
		Name:   "updates the fields sent",
		Req:    update,
		Script: map[string]httpapitest.Result{"Agents.Update": {Values: []any{anAgent()}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"slug": "support"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			p := httpapitest.OnlyCall(t, s, "Agents.Update")[2].(agent.Patch)
			if p.Name == nil || *p.Name != "Help" || p.Published == nil || *p.Published || p.SystemPrompt != nil {
				t.Fatalf("Update(%+v)", p)
			}
		},
	}, {
		Name: "empty name", Req: httpapitest.Request{Method: "PATCH", Path: "/api/v2/agents/support", Body: `{"name":""}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.name": "must be at least 1 character"}},
	}}, httpapitest.BadBodies("PATCH", "/api/v2/agents/support")...), httpapitest.ErrorCases(update, "Agents.Update", 400, 404, 500)...))

	del := httpapitest.Request{Method: "DELETE", Path: "/api/v2/agents/support"}
	httpapitest.Run(t, "DELETE /agents/{slug}", newApp, append([]httpapitest.Case{{
		Name:   "deletes",
		Req:    del,
		Script: map[string]httpapitest.Result{"Agents.Delete": {}},
		Want:   httpapitest.Want{Status: 204},
	}}, httpapitest.ErrorCases(del, "Agents.Delete", 404, 500)...))
}

func TestSources(t *testing.T) {
	const path = "/api/v2/agents/support/sources"
	create := httpapitest.Request{Method: "POST", Path: path, Body: `{"type":"text","name":"FAQ","content":"We ship in 2 days."}`}
	upload, uploadType := httpapitest.Multipart(map[string]string{"type": "file", "name": "Manual"}, "manual.txt", []byte("Press the button."))
	httpapitest.Run(t, "POST /agents/{slug}/sources", newApp, append(append([]httpapitest.Case{{
		Name:   "creates",
		Req:    create,
		Script: map[string]httpapitest.Result{"Sources.AddSource": {Values: []any{aSource()}}},
		Want: httpapitest.Want{Status: 201, Fields: map[string]any{"id": sourceID, "agent": "support", "content": "We ship in 2 days.", "status": "PENDING"},
			Header: map[string]string{"Location": "/api/v2/agents/support/sources/" + sourceID}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			src := httpapitest.OnlyCall(t, s, "Sources.AddSource")[2].(domain.Source)
			if src.Type != domain.SourceText || src.Content != "We ship in 2 days." {
				t.Fatalf("AddSource(%+v)", src)
			}
		},
	}, {
		Name:   "uploads a file",
		Req:    httpapitest.Request{Method: "POST", Path: path, Body: upload, ContentType: uploadType},
		Script: map[string]httpapitest.Result{"Sources.AddSource": {Values: []any{domain.Source{ID: sourceID, Type: domain.SourceFile, Name: "Manual", Filename: "manual.txt", Status: domain.SourcePending, CreatedAt: now, UpdatedAt: now}}}},
		Want:   httpapitest.Want{Status: 201, Fields: map[string]any{"filename": "manual.txt", "type": "file"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			src := httpapitest.OnlyCall(t, s, "Sources.AddSource")[2].(domain.Source)
			if src.Type != domain.SourceFile || src.Name != "Manual" || string(src.File) != "Press the button." {
				t.Fatalf("AddSource(%+v)", src)
			}
		},
	}, {
		Name: "a file as JSON", Req: httpapitest.Request{Method: "POST", Path: path, Body: `{"type":"file"}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.file": "upload files as multipart/form-data with the fields type=file, name (optional) and file"}},
	}, {
		Name: "unknown type", Req: httpapitest.Request{Method: "POST", Path: path, Body: `{"type":"pdf"}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.type": "must be one of text, qa, file, url, website"}},
	}, {
		Name: "missing type", Req: httpapitest.Request{Method: "POST", Path: path, Body: `{"name":"x"}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.type": "is required"}},
	}, {
		Name: "multipart without a boundary", Req: httpapitest.Request{Method: "POST", Path: path, Body: "x", ContentType: "multipart/form-data"},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.message": "invalid multipart/form-data body"}},
	}}, httpapitest.BadBodies("POST", path)...), httpapitest.ErrorCases(create, "Sources.AddSource", 400, 403, 404, 500)...))

	list := httpapitest.Request{Method: "GET", Path: path}
	httpapitest.Run(t, "GET /agents/{slug}/sources", newApp, append(append([]httpapitest.Case{{
		Name:   "lists",
		Req:    list,
		Script: map[string]httpapitest.Result{"Sources.ListSources": {Values: []any{page(aSource())}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.id": sourceID, "data.0.agent": "support", "meta.hasMore": false}},
	}}, httpapitest.BadPages(path)...), httpapitest.ErrorCases(list, "Sources.ListSources", 404, 500)...))

	get := httpapitest.Request{Method: "GET", Path: path + "/" + sourceID}
	httpapitest.Run(t, "GET /agents/{slug}/sources/{id}", newApp, append([]httpapitest.Case{{
		Name:   "gets",
		Req:    get,
		Script: map[string]httpapitest.Result{"Sources.GetSource": {Values: []any{aSource()}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"id": sourceID, "indexedAt": nil}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if args := httpapitest.OnlyCall(t, s, "Sources.GetSource"); args[1] != "support" || args[2] != sourceID {
				t.Fatalf("GetSource(%v)", args)
			}
		},
	}}, httpapitest.ErrorCases(get, "Sources.GetSource", 404, 500)...))

	reindex := httpapitest.Request{Method: "POST", Path: path + "/" + sourceID + "/reindex"}
	httpapitest.Run(t, "POST /agents/{slug}/sources/{id}/reindex", newApp, append([]httpapitest.Case{{
		Name:   "schedules",
		Req:    reindex,
		Script: map[string]httpapitest.Result{"Sources.Reindex": {Values: []any{aSource()}}},
		Want:   httpapitest.Want{Status: 202, Fields: map[string]any{"id": sourceID, "status": "PENDING"}},
	}}, httpapitest.ErrorCases(reindex, "Sources.Reindex", 404, 500)...))

	del := httpapitest.Request{Method: "DELETE", Path: path + "/" + sourceID}
	httpapitest.Run(t, "DELETE /agents/{slug}/sources/{id}", newApp, append([]httpapitest.Case{{
		Name:   "deletes",
		Req:    del,
		Script: map[string]httpapitest.Result{"Sources.DeleteSource": {}},
		Want:   httpapitest.Want{Status: 204},
	}}, httpapitest.ErrorCases(del, "Sources.DeleteSource", 404, 500)...))
}

func TestConversations(t *testing.T) {
	list := httpapitest.Request{Method: "GET", Path: "/api/v2/conversations?agent=support&status=AI"}
	httpapitest.Run(t, "GET /conversations", newApp, append(append([]httpapitest.Case{{
		Name:   "lists with filters",
		Req:    list,
		Script: map[string]httpapitest.Result{"Conversations.List": {Values: []any{page(aConversation())}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.id": sessionID, "data.0.agent": "support", "data.0.contactName": nil, "data.0.contactNote": nil,
			"data.0.handoffRequestedAt": nil}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			f := httpapitest.OnlyCall(t, s, "Conversations.List")[1].(conversation.ListFilter)
			if f.AgentSlug != "support" || f.Status != domain.StatusAI {
				t.Fatalf("List(%+v)", f)
			}
		},
	}, {
		Name:   "passes fallback, rating and q as given",
		Req:    httpapitest.Request{Method: "GET", Path: "/api/v2/conversations?fallback=yes&rating=down&q=" + url.QueryEscape(" refund|status=AI ")},
		Script: map[string]httpapitest.Result{"Conversations.List": {Values: []any{page(aConversation())}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.id": sessionID}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			f := httpapitest.OnlyCall(t, s, "Conversations.List")[1].(conversation.ListFilter)
			if f.Fallback != domain.FallbackFilterSome || f.Rating != domain.RatingDown || f.Query != " refund|status=AI " {
				t.Fatalf("List(%+v)", f)
			}
		},
	}, {
		Name:   "passes assignee as given and shows the conversation's",
		Req:    httpapitest.Request{Method: "GET", Path: "/api/v2/conversations?assignee=none"},
		Script: map[string]httpapitest.Result{"Conversations.List": {Values: []any{page(aConversation())}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.id": sessionID, "data.0.assigneeId": nil}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if f := httpapitest.OnlyCall(t, s, "Conversations.List")[1].(conversation.ListFilter); f.Assignee != "none" {
				t.Fatalf("List(%+v)", f)
			}
		},
	}, {
		Name:   "passes the report filters, days as UTC midnights",
		Req:    httpapitest.Request{Method: "GET", Path: "/api/v2/conversations?startedFrom=2026-11-01&startedTo=2026-11-30&outcome=UNDECIDED&fallbackReason=MODEL_DECLINED&handedOff=true&timed=resolution"},
		Script: map[string]httpapitest.Result{"Conversations.List": {Values: []any{page(aConversation())}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.id": sessionID}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			f := httpapitest.OnlyCall(t, s, "Conversations.List")[1].(conversation.ListFilter)
			if !f.StartedFrom.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) || !f.StartedTo.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) ||
				f.Outcome != domain.OutcomeUndecided || f.FallbackReason != domain.FallbackModelDeclined || !f.HandedOff || f.Timed != domain.DurationResolution {
				t.Fatalf("List(%+v)", f)
			}
		},
	}, {
		Name: "a day that is no day", Req: httpapitest.Request{Method: "GET", Path: "/api/v2/conversations?startedFrom=2026-02-30"},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.startedFrom": "must be a day, as 2026-11-01"}},
	}, {
		Name: "a time for a day", Req: httpapitest.Request{Method: "GET", Path: "/api/v2/conversations?startedTo=" + url.QueryEscape("2026-11-30T10:00:00Z")},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.startedTo": "must be a day, as 2026-11-01"}},
	}, {
		Name: "handedOff other than true", Req: httpapitest.Request{Method: "GET", Path: "/api/v2/conversations?handedOff=false"},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.handedOff": "must be true"}},
	}, {
		Name:   "the use case refuses an outcome",
		Req:    httpapitest.Request{Method: "GET", Path: "/api/v2/conversations?outcome=GREAT"},
		Script: map[string]httpapitest.Result{"Conversations.List": {Err: domain.InvalidField("outcome", "must be one of ...")}},
		Want:   httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.outcome": "must be one of ..."}},
	}}, httpapitest.BadPages("/api/v2/conversations")...), httpapitest.ErrorCases(list, "Conversations.List", 400, 404, 500)...))

	get := httpapitest.Request{Method: "GET", Path: "/api/v2/conversations/" + sessionID}
	httpapitest.Run(t, "GET /conversations/{id}", newApp, append(append([]httpapitest.Case{{
		Name: "gets with its messages",
		Req:  get,
		Script: map[string]httpapitest.Result{"Conversations.Get": {Values: []any{aConversation(),
			page(aMessage(messageID, domain.RoleUser, "Hi"), aMessage(replyID, domain.RoleAssistant, "Hello"))}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{"id": sessionID, "messages.data.0.role": "USER", "messages.data.1.content": "Hello", "messages.meta.hasMore": false}},
	}, {
		Name: "shows a console reply and note with their author",
		Req:  get,
		Script: map[string]httpapitest.Result{"Conversations.Get": {Values: []any{aConversation(),
			page(authored(replyID, domain.RoleHuman, "On it."), authored(messageID, domain.RoleNote, "Refund approved."))}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{
			"messages.data.0.role": "HUMAN", "messages.data.0.authorName": "Ann", "messages.data.0.authorId": memberID,
			"messages.data.1.role": "NOTE", "messages.data.1.authorName": "Ann", "messages.data.1.authorId": memberID,
			"messages.data.1.content": "Refund approved.",
		}},
	}, {
		Name:   "shows the handoff form's contact and note",
		Req:    get,
		Script: map[string]httpapitest.Result{"Conversations.Get": {Values: []any{handedOff(), page[domain.Message]()}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{
			"status": "HANDOFF_REQUESTED", "contactName": "Ada", "contactEmail": nil, "contactNote": "Call me after 5pm <b>please</b>",
			"handoffRequestedAt": "2026-11-27T11:55:00.000Z",
		}},
	}}, httpapitest.BadPages("/api/v2/conversations/"+sessionID)...), httpapitest.ErrorCases(get, "Conversations.Get", 404, 500)...))

	trace := httpapitest.Request{Method: "GET", Path: "/api/v2/conversations/" + sessionID + "/messages/" + replyID + "/trace"}
	httpapitest.Run(t, "GET /conversations/{id}/messages/{messageId}/trace", newApp, append([]httpapitest.Case{{
		Name:   "gets",
		Req:    trace,
		Script: map[string]httpapitest.Result{"Conversations.MessageTrace": {Values: []any{aTrace()}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"query": "shipping", "candidates.0.keywordRank": 1, "candidates.0.vectorRank": nil, "candidates.0.relevance": nil, "answerability": nil, "answerFeatures": nil}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if args := httpapitest.OnlyCall(t, s, "Conversations.MessageTrace"); args[1] != sessionID || args[2] != replyID {
				t.Fatalf("MessageTrace(%v)", args)
			}
		},
	}, {
		Name:   "reranked: what the answerability was computed from, by name",
		Req:    trace,
		Script: map[string]httpapitest.Result{"Conversations.MessageTrace": {Values: []any{rerankedTrace([]string{"page", "missingName"}, []float64{0.5, 1})}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"answerability": 0.21, "answerFeatures.page": 0.5, "answerFeatures.missingName": 1}},
	}, {
		Name:   "reranked, stored before answer features were kept",
		Req:    trace,
		Script: map[string]httpapitest.Result{"Conversations.MessageTrace": {Values: []any{rerankedTrace(nil, nil)}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"answerability": 0.21, "answerFeatures": nil}},
	}}, httpapitest.ErrorCases(trace, "Conversations.MessageTrace", 404, 500)...))
}

func TestChat(t *testing.T) {
	answer := domain.Answer{SessionID: sessionID, UserMessage: aMessage(messageID, domain.RoleUser, "Shipping?"),
		Reply: aMessage(replyID, domain.RoleAssistant, "Two days.")}
	body := `{"agent":"support","message":"Shipping?"}`
	post := httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: body, Header: map[string]string{"Idempotency-Key": "k1", "X-Service-Identity": "id", "X-Service-Signature": "sig"}}
	stream := httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: `{"agent":"support","message":"Shipping?","stream":true}`}
	done := answer
	httpapitest.Run(t, "POST /chat", newApp, append(append([]httpapitest.Case{{
		Name:   "answers",
		Req:    post,
		Script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Answer: answer}}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"sessionId": sessionID, "messageId": replyID, "message": "Two days.", "isFallback": false, "fallbackReason": nil}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			req := httpapitest.OnlyCall(t, s, "Chat.Start")[0].(chat.Request)
			if req.Session.Workspace == nil || req.Session.Workspace.ID != "ws_test" || req.AgentSlug != "support" || req.Message != "Shipping?" ||
				req.IdempotencyKey != "k1" || req.Session.IdentityHeader != "id" || req.Session.SignatureHeader != "sig" {
				t.Fatalf("Start(%+v)", req)
			}
		},
	}, {
		Name: "streams",
		Req:  stream,
		Script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Answer: answer, Events: []domain.SessionEvent{
			{Type: domain.EventMessage, SessionID: sessionID, MessageID: messageID, Seq: 1, Message: &answer.UserMessage},
			{Type: domain.EventToken, SessionID: sessionID, MessageID: replyID, Seq: 1, Content: "Two "},
			{Type: domain.EventToken, SessionID: sessionID, MessageID: replyID, Seq: 2, Content: "days."},
			{Type: domain.EventDone, SessionID: sessionID, MessageID: replyID, Seq: 3, Answer: &done},
		}}}}},
		// The POST stream of v2 carries the answer only, not the question.
		Want: httpapitest.Want{Status: 200, Events: []string{"token", "token", "done"}, IDs: []string{replyID + ":1", replyID + ":2", replyID + ":3"}},
	}, {
		Name: "a stream whose answer was not stored ends with an error event",
		Req:  stream,
		Script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Err: httpapitest.ErrUnavailable, Events: []domain.SessionEvent{
			{Type: domain.EventToken, SessionID: sessionID, MessageID: replyID, Seq: 1, Content: "Two "},
		}}}}},
		Want: httpapitest.Want{Status: 200, Events: []string{"token", "error"}, IDs: []string{replyID + ":1", ""}},
	}, {
		Name:   "the answer not stored",
		Req:    post,
		Script: map[string]httpapitest.Result{"Chat.Start": {Values: []any{&httpapitest.Turn{Err: httpapitest.ErrUnavailable}}}},
		Want:   httpapitest.Want{Status: 503, Code: domain.CodeUnavailable},
	}, {
		Name: "wrong type", Req: httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: `{"message":"x","stream":"yes"}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.stream": "must be a boolean"}},
	}, {
		Name: "a session id too long", Req: httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: `{"message":"x","sessionId":"ses_0000000000000000000000000000000000000000000000000000000000000000"}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.sessionId": "must be at most 64 characters"}},
	}, {
		Name: "an Idempotency-Key with a NUL", Req: httpapitest.Request{Method: "POST", Path: "/api/v2/chat", Body: body, Header: map[string]string{"Idempotency-Key": "a\x00b"}},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation},
	}}, httpapitest.BadBodies("POST", "/api/v2/chat")...), httpapitest.ErrorCases(post, "Chat.Start", 400, 403, 404, 409, 500)...))

	// Errors before a stream starts are JSON error bodies.
	httpapitest.Run(t, "POST /chat stream", newApp, httpapitest.ErrorCases(stream, "Chat.Start", 400, 404, 409))

	retrieve := httpapitest.Request{Method: "POST", Path: "/api/v2/agents/support/retrieve", Body: `{"query":"shipping","topK":3,"threshold":0.5}`}
	httpapitest.Run(t, "POST /agents/{slug}/retrieve", newApp, append(append([]httpapitest.Case{{
		Name: "retrieves",
		Req:  retrieve,
		Script: map[string]httpapitest.Result{"Retrieval.Retrieve": {Values: []any{
			[]domain.Chunk{{ID: chunkID, SourceID: sourceID, SourceType: domain.SourceText, DocumentName: "FAQ", Text: "We ship in 2 days.", Score: 0.5}}, aTrace()}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{"query": "shipping", "results.0.chunkId": chunkID, "results.0.url": nil, "trace.method": "keyword"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			req := httpapitest.OnlyCall(t, s, "Retrieval.Retrieve")[0].(chat.RetrieveRequest)
			if req.WorkspaceID != "ws_test" || req.AgentSlug != "support" || req.TopK != 3 || req.Threshold == nil || *req.Threshold != 0.5 {
				t.Fatalf("Retrieve(%+v)", req)
			}
		},
	}, {
		Name: "topK out of range", Req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents/support/retrieve", Body: `{"query":"q","topK":51}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.topK": "must be at most 50"}},
	}, {
		Name: "threshold out of range", Req: httpapitest.Request{Method: "POST", Path: "/api/v2/agents/support/retrieve", Body: `{"query":"q","threshold":2}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.threshold": "must be at most 1"}},
	}}, httpapitest.BadBodies("POST", "/api/v2/agents/support/retrieve")...), httpapitest.ErrorCases(retrieve, "Retrieval.Retrieve", 400, 404, 500)...))
}

// memberID is the member who wrote authored messages from the console.
const memberID = "usr_01hzy3q3q3q3q3q3q3q3q3q3q3"

// authored is a message a member wrote from the console.
func authored(id string, role domain.Role, content string) domain.Message {
	m := aMessage(id, role, content)
	m.AuthorName, m.AuthorID = "Ann", memberID
	return m
}

func TestHandoff(t *testing.T) {
	post := httpapitest.Request{Method: "POST", Path: "/api/v2/conversations/" + sessionID + "/messages", Body: `{"role":"HUMAN","content":"I can help.","authorName":"Ann"}`}
	reply := aMessage(replyID, domain.RoleHuman, "I can help.")
	reply.AuthorName = "Ann"
	note := aMessage(messageID, domain.RoleNote, "VIP customer.")
	note.AuthorName = "Ann"
	httpapitest.Run(t, "POST /conversations/{id}/messages", newApp, append(append([]httpapitest.Case{{
		Name:   "posts",
		Req:    post,
		Script: map[string]httpapitest.Result{"HumanReplies.PostHumanMessage": {Values: []any{reply}}},
		Want:   httpapitest.Want{Status: 201, Fields: map[string]any{"id": replyID, "role": "HUMAN", "content": "I can help."}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			args := httpapitest.OnlyCall(t, s, "HumanReplies.PostHumanMessage")
			if m := args[2].(handoff.HumanMessage); args[0] != "ws_test" || args[1] != sessionID || m.Role != "HUMAN" || m.AuthorName != "Ann" {
				t.Fatalf("PostHumanMessage(%v)", args)
			}
		},
	}, {
		Name:   "posts a note, passed on with its role and author",
		Req:    httpapitest.Request{Method: "POST", Path: "/api/v2/conversations/" + sessionID + "/messages", Body: `{"role":"NOTE","content":"VIP customer.","authorName":"Ann"}`},
		Script: map[string]httpapitest.Result{"HumanReplies.PostHumanMessage": {Values: []any{note}}},
		Want:   httpapitest.Want{Status: 201, Fields: map[string]any{"id": messageID, "role": "NOTE", "authorName": "Ann"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			args := httpapitest.OnlyCall(t, s, "HumanReplies.PostHumanMessage")
			if m := args[2].(handoff.HumanMessage); m.Role != "NOTE" || m.Content != "VIP customer." || m.AuthorName != "Ann" || m.AuthorID != "" {
				t.Fatalf("PostHumanMessage(%v)", args)
			}
		},
	}}, httpapitest.BadBodies("POST", "/api/v2/conversations/"+sessionID+"/messages")...), httpapitest.ErrorCases(post, "HumanReplies.PostHumanMessage", 400, 404, 409, 500)...))

	status := httpapitest.Request{Method: "POST", Path: "/api/v2/conversations/" + sessionID + "/status", Body: `{"status":"RESOLVED"}`}
	resolved := aConversation()
	resolved.Status = domain.StatusResolved
	httpapitest.Run(t, "POST /conversations/{id}/status", newApp, append(append([]httpapitest.Case{{
		Name:   "moves",
		Req:    status,
		Script: map[string]httpapitest.Result{"HumanReplies.SetStatus": {Values: []any{resolved}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"id": sessionID, "status": "RESOLVED"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if args := httpapitest.OnlyCall(t, s, "HumanReplies.SetStatus"); args[2] != domain.StatusResolved {
				t.Fatalf("SetStatus(%v)", args)
			}
		},
	}, {
		Name: "wrong type", Req: httpapitest.Request{Method: "POST", Path: status.Path, Body: `{"status":1}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.status": "must be a string"}},
	}}, httpapitest.BadBodies("POST", status.Path)...), httpapitest.ErrorCases(status, "HumanReplies.SetStatus", 400, 404, 409, 500)...))
}

func TestSetAssignee(t *testing.T) {
	path := "/api/v2/conversations/" + sessionID + "/assignee"
	user := domain.NewID(domain.PrefixUser)
	assigned := aConversation()
	assigned.AssigneeID = user
	assign := httpapitest.Request{Method: "PUT", Path: path, Body: `{"assigneeId":"` + user + `"}`}
	unassign := httpapitest.Request{Method: "PUT", Path: path, Body: `{"assigneeId":null}`}
	httpapitest.Run(t, "PUT /conversations/{id}/assignee", newApp, append(append(append([]httpapitest.Case{{
		Name:   "assigns without an actor",
		Req:    assign,
		Script: map[string]httpapitest.Result{"Assignments.Assign": {Values: []any{assigned}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"id": sessionID, "assigneeId": user}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			args := httpapitest.OnlyCall(t, s, "Assignments.Assign")
			if args[1] != sessionID || args[2] != user || args[3].(*domain.Member) != nil {
				t.Fatalf("Assign(%v)", args)
			}
		},
	}, {
		Name:   "null unassigns",
		Req:    unassign,
		Script: map[string]httpapitest.Result{"Assignments.Unassign": {Values: []any{aConversation()}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"id": sessionID, "assigneeId": nil}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if args := httpapitest.OnlyCall(t, s, "Assignments.Unassign"); args[1] != sessionID || args[2].(*domain.Member) != nil {
				t.Fatalf("Unassign(%v)", args)
			}
		},
	}, {
		Name: "wrong type", Req: httpapitest.Request{Method: "PUT", Path: path, Body: `{"assigneeId":1}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.assigneeId": "must be a string"}},
	}, {
		// PUT never takes over, so this conflict is for a service that
		// refuses the change; the holder reaches the client as details.
		Name:   "a conflict names the holder",
		Req:    assign,
		Script: map[string]httpapitest.Result{"Assignments.Assign": {Err: domain.HeldByOther(user)}},
		Want: httpapitest.Want{Status: 409, Code: domain.CodeConflict, Fields: map[string]any{
			"error.message": "the conversation is assigned to another member", "error.details.assigneeId": user,
		}},
	}}, httpapitest.BadBodies("PUT", path)...), httpapitest.ErrorCases(assign, "Assignments.Assign", 400, 404, 500)...),
		httpapitest.ErrorCases(unassign, "Assignments.Unassign", 404, 500)...))
}

func TestIntegrations(t *testing.T) {
	get := httpapitest.Request{Method: "GET", Path: "/api/v2/integrations"}
	httpapitest.Run(t, "GET /integrations", newApp, append([]httpapitest.Case{{
		Name:   "gets without the secret",
		Req:    get,
		Script: map[string]httpapitest.Result{"Integrations.Integrations": {Values: []any{aWorkspace()}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{"helpdesk": "inbox", "helpdeskUrl": nil, "eventsUrl": "https://hooks.example/events",
			"signingSecretSet": true, "signingSecret": httpapitest.Absent, "autoAssign": false}},
	}}, httpapitest.ErrorCases(get, "Integrations.Integrations", 500, 503)...))

	update := httpapitest.Request{Method: "PATCH", Path: "/api/v2/integrations", Body: `{"helpdeskUrl":"https://desk.example/hook","eventsUrl":""}`}
	withDesk := aWorkspace()
	withDesk.HelpdeskURL = "https://desk.example/hook"
	autoAssigning := aWorkspace()
	autoAssigning.AutoAssign = true
	httpapitest.Run(t, "PATCH /integrations", newApp, append(append([]httpapitest.Case{{
		Name:   "updates and shows a new secret once",
		Req:    update,
		Script: map[string]httpapitest.Result{"Integrations.SetIntegrations": {Values: []any{withDesk, "whsec_bmV3"}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"helpdesk": "webhook", "signingSecret": "whsec_bmV3"}, Header: map[string]string{"Cache-Control": "no-store"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			ch := httpapitest.OnlyCall(t, s, "Integrations.SetIntegrations")[1].(delivery.IntegrationsChange)
			if ch.HelpdeskURL == nil || *ch.HelpdeskURL != "https://desk.example/hook" || ch.EventsURL == nil || *ch.EventsURL != "" {
				t.Fatalf("SetIntegrations(%+v)", ch)
			}
		},
	}, {
		Name:   "updates without a new secret",
		Req:    httpapitest.Request{Method: "PATCH", Path: "/api/v2/integrations", Body: `{}`},
		Script: map[string]httpapitest.Result{"Integrations.SetIntegrations": {Values: []any{aWorkspace(), ""}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"signingSecret": httpapitest.Absent}, Header: map[string]string{"Cache-Control": ""}},
	}, {
		Name:   "turns auto-assignment on, the URLs left alone",
		Req:    httpapitest.Request{Method: "PATCH", Path: "/api/v2/integrations", Body: `{"autoAssign":true}`},
		Script: map[string]httpapitest.Result{"Integrations.SetIntegrations": {Values: []any{autoAssigning, ""}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"autoAssign": true, "helpdesk": "inbox"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			ch := httpapitest.OnlyCall(t, s, "Integrations.SetIntegrations")[1].(delivery.IntegrationsChange)
			if ch.AutoAssign == nil || !*ch.AutoAssign || ch.HelpdeskURL != nil || ch.EventsURL != nil {
				t.Fatalf("SetIntegrations(%+v)", ch)
			}
		},
	}, {
		Name: "wrong type", Req: httpapitest.Request{Method: "PATCH", Path: "/api/v2/integrations", Body: `{"eventsUrl":true}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.eventsUrl": "must be a string"}},
	}, {
		Name: "auto-assignment not a boolean", Req: httpapitest.Request{Method: "PATCH", Path: "/api/v2/integrations", Body: `{"autoAssign":"yes"}`},
		Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.autoAssign": "must be a boolean"}},
	}}, httpapitest.BadBodies("PATCH", "/api/v2/integrations")...), httpapitest.ErrorCases(update, "Integrations.SetIntegrations", 400, 403, 500)...))

	rotate := httpapitest.Request{Method: "POST", Path: "/api/v2/integrations/signing-secret"}
	httpapitest.Run(t, "POST /integrations/signing-secret", newApp, append([]httpapitest.Case{{
		Name:   "rotates",
		Req:    rotate,
		Script: map[string]httpapitest.Result{"Integrations.RotateSigningSecret": {Values: []any{aWorkspace()}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"signingSecret": "whsec_c2VjcmV0"}, Header: map[string]string{"Cache-Control": "no-store"}},
	}}, httpapitest.ErrorCases(rotate, "Integrations.RotateSigningSecret", 500, 503)...))
}

func TestDeliveries(t *testing.T) {
	list := httpapitest.Request{Method: "GET", Path: "/api/v2/deliveries?target=events&status=FAILED&type=message.created"}
	httpapitest.Run(t, "GET /deliveries", newApp, append(append([]httpapitest.Case{{
		Name:   "lists with filters",
		Req:    list,
		Script: map[string]httpapitest.Result{"DeliveryLog.List": {Values: []any{page(aDelivery(domain.DeliveryPending))}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.id": deliveryID, "data.0.nextAttemptAt": "2026-11-27T12:00:00.000Z", "data.0.deliveredAt": nil}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			f := httpapitest.OnlyCall(t, s, "DeliveryLog.List")[1].(domain.DeliveryFilter)
			if f.Target != "events" || f.Status != domain.DeliveryFailed || f.Type != "message.created" {
				t.Fatalf("List(%+v)", f)
			}
		},
	}}, httpapitest.BadPages("/api/v2/deliveries")...), httpapitest.ErrorCases(list, "DeliveryLog.List", 400, 500)...))

	get := httpapitest.Request{Method: "GET", Path: "/api/v2/deliveries/" + deliveryID}
	httpapitest.Run(t, "GET /deliveries/{id}", newApp, append([]httpapitest.Case{{
		Name: "gets with its attempts",
		Req:  get,
		Script: map[string]httpapitest.Result{"DeliveryLog.Get": {Values: []any{aDelivery(domain.DeliveryFailed),
			[]domain.DeliveryAttempt{{Attempt: 1, At: now, StatusCode: 500, Error: "HTTP 500", Duration: 120 * time.Millisecond}, {Attempt: 2, At: now, Error: "timeout"}}}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{"id": deliveryID, "nextAttemptAt": nil, "log.0.statusCode": 500, "log.0.durationMs": 120, "log.1.statusCode": nil}},
	}}, httpapitest.ErrorCases(get, "DeliveryLog.Get", 404, 500)...))

	retry := httpapitest.Request{Method: "POST", Path: "/api/v2/deliveries/" + deliveryID + "/retry"}
	httpapitest.Run(t, "POST /deliveries/{id}/retry", newApp, append([]httpapitest.Case{{
		Name:   "retries",
		Req:    retry,
		Script: map[string]httpapitest.Result{"DeliveryLog.Retry": {Values: []any{aDelivery(domain.DeliveryPending)}}},
		Want:   httpapitest.Want{Status: 202, Fields: map[string]any{"id": deliveryID, "status": "PENDING"}},
	}}, httpapitest.ErrorCases(retry, "DeliveryLog.Retry", 404, 409, 500)...))
}

func TestEvents(t *testing.T) {
	follow := httpapitest.Request{Method: "GET", Path: "/api/v2/conversations/" + sessionID + "/events", Header: map[string]string{"Last-Event-ID": messageID + ":1"}}
	msg := aMessage(replyID, domain.RoleHuman, "I can help.")
	httpapitest.Run(t, "GET /conversations/{id}/events", newApp, append([]httpapitest.Case{{
		Name: "streams",
		Req:  follow,
		Script: map[string]httpapitest.Result{"Relay.Open": {Values: []any{&httpapitest.LiveStream{Events: []domain.SessionEvent{
			{Type: domain.EventMessage, SessionID: sessionID, MessageID: replyID, Seq: 1, Message: &msg},
			{Type: domain.EventStatus, SessionID: sessionID, MessageID: replyID, Seq: 2, Status: domain.StatusHuman},
		}}}}},
		Want: httpapitest.Want{Status: 200, Events: []string{"message", "status"}, Header: map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			req := httpapitest.OnlyCall(t, s, "Relay.Open")[0].(relay.Request)
			if req.Session.Workspace == nil || req.Session.Workspace.ID != "ws_test" || req.Session.ID != sessionID || req.LastEventID != messageID+":1" {
				t.Fatalf("Open(%+v)", req)
			}
		},
	}, {
		Name:   "resumes after the lastEventId parameter",
		Req:    httpapitest.Request{Method: "GET", Path: "/api/v2/conversations/" + sessionID + "/events?lastEventId=" + messageID + ":2"},
		Script: map[string]httpapitest.Result{"Relay.Open": {Values: []any{&httpapitest.LiveStream{Events: []domain.SessionEvent{{Type: domain.EventStatus, SessionID: sessionID, MessageID: replyID, Seq: 3, Status: domain.StatusResolved}}}}}},
		Want:   httpapitest.Want{Status: 200, Events: []string{"status"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if req := httpapitest.OnlyCall(t, s, "Relay.Open")[0].(relay.Request); req.LastEventID != messageID+":2" {
				t.Fatalf("Open(%+v)", req)
			}
		},
	}}, httpapitest.ErrorCases(follow, "Relay.Open", 400, 404, 500, 503)...))
}

func TestFeedbackList(t *testing.T) {
	list := httpapitest.Request{Method: "GET", Path: "/api/v2/feedback?agent=support&rating=down"}
	httpapitest.Run(t, "GET /feedback", newApp, append(append([]httpapitest.Case{{
		Name: "lists",
		Req:  list,
		Script: map[string]httpapitest.Result{"RatedAnswers.List": {Values: []any{page(domain.RatedAnswer{MessageID: replyID, ConversationID: sessionID, AgentSlug: "support",
			Content: "Two days.", Feedback: domain.Feedback{Rating: domain.RatingDown, Comment: "too slow", UpdatedAt: now}})}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{"data.0.messageId": replyID, "data.0.rating": "down", "data.0.comment": "too slow"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if f := httpapitest.OnlyCall(t, s, "RatedAnswers.List")[1].(feedback.ListFilter); f.AgentSlug != "support" || f.Rating != "down" {
				t.Fatalf("List(%+v)", f)
			}
		},
	}}, httpapitest.BadPages("/api/v2/feedback")...), httpapitest.ErrorCases(list, "RatedAnswers.List", 400, 404, 500)...))
}
