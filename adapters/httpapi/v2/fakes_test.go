package v2_test

import (
	"context"
	"testing"

	"github.com/conciergehq/concierge/adapters/httpapi/httpapitest"
	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	v2 "github.com/conciergehq/concierge/adapters/httpapi/v2"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/relay"
	"github.com/conciergehq/concierge/core/report"
	"github.com/conciergehq/concierge/core/savedreply"
)

// Scripted fakes of v2's use cases: each method records its arguments and
// returns what the test scripted under "Interface.Method".

type fakeAgents struct{ *httpapitest.Script }

var _ v2.Agents = fakeAgents{}

func (f fakeAgents) List(_ context.Context, ws string, page domain.PageRequest) (domain.Page[domain.Agent], error) {
	r := f.Call("Agents.List", ws, page)
	return httpapitest.Value[domain.Page[domain.Agent]](r, 0), r.Err
}

func (f fakeAgents) Create(_ context.Context, ws string, a domain.Agent) (domain.Agent, error) {
	r := f.Call("Agents.Create", ws, a)
	return httpapitest.Value[domain.Agent](r, 0), r.Err
}

func (f fakeAgents) Get(_ context.Context, ws, slug string) (domain.Agent, error) {
	r := f.Call("Agents.Get", ws, slug)
	return httpapitest.Value[domain.Agent](r, 0), r.Err
}

func (f fakeAgents) Update(_ context.Context, ws, slug string, p agent.Patch) (domain.Agent, error) {
	r := f.Call("Agents.Update", ws, slug, p)
	return httpapitest.Value[domain.Agent](r, 0), r.Err
}

func (f fakeAgents) Delete(_ context.Context, ws, slug string) error {
	return f.Call("Agents.Delete", ws, slug).Err
}

type fakeSources struct{ *httpapitest.Script }

var _ v2.Sources = fakeSources{}

func (f fakeSources) AddSource(_ context.Context, ws, slug string, src domain.Source) (domain.Source, error) {
	r := f.Call("Sources.AddSource", ws, slug, src)
	return httpapitest.Value[domain.Source](r, 0), r.Err
}

func (f fakeSources) ListSources(_ context.Context, ws, slug string, page domain.PageRequest) (domain.Page[domain.Source], error) {
	r := f.Call("Sources.ListSources", ws, slug, page)
	return httpapitest.Value[domain.Page[domain.Source]](r, 0), r.Err
}

func (f fakeSources) GetSource(_ context.Context, ws, slug, id string) (domain.Source, error) {
	r := f.Call("Sources.GetSource", ws, slug, id)
	return httpapitest.Value[domain.Source](r, 0), r.Err
}

func (f fakeSources) Reindex(_ context.Context, ws, slug, id string) (domain.Source, error) {
	r := f.Call("Sources.Reindex", ws, slug, id)
	return httpapitest.Value[domain.Source](r, 0), r.Err
}

func (f fakeSources) DeleteSource(_ context.Context, ws, slug, id string) error {
	return f.Call("Sources.DeleteSource", ws, slug, id).Err
}

type fakeConversations struct{ *httpapitest.Script }

var _ v2.Conversations = fakeConversations{}

func (f fakeConversations) List(_ context.Context, ws string, filter conversation.ListFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	r := f.Call("Conversations.List", ws, filter, page)
	return httpapitest.Value[domain.Page[domain.Conversation]](r, 0), r.Err
}

func (f fakeConversations) Get(_ context.Context, ws, id string, page domain.PageRequest) (domain.Conversation, domain.Page[domain.Message], error) {
	r := f.Call("Conversations.Get", ws, id, page)
	return httpapitest.Value[domain.Conversation](r, 0), httpapitest.Value[domain.Page[domain.Message]](r, 1), r.Err
}

func (f fakeConversations) MessageTrace(_ context.Context, ws, conversationID, messageID string) (domain.RetrievalTrace, error) {
	r := f.Call("Conversations.MessageTrace", ws, conversationID, messageID)
	return httpapitest.Value[domain.RetrievalTrace](r, 0), r.Err
}

type fakeChat struct{ *httpapitest.Script }

var _ v2.Chat = fakeChat{}

func (f fakeChat) Start(_ context.Context, req chat.Request) (sse.Turn, error) {
	r := f.Call("Chat.Start", req)
	if r.Err != nil {
		return nil, r.Err
	}
	return httpapitest.Value[*httpapitest.Turn](r, 0), nil
}

type fakeRetrieval struct{ *httpapitest.Script }

var _ v2.Retrieval = fakeRetrieval{}

func (f fakeRetrieval) Retrieve(_ context.Context, req chat.RetrieveRequest) ([]domain.Chunk, domain.RetrievalTrace, error) {
	r := f.Call("Retrieval.Retrieve", req)
	return httpapitest.Value[[]domain.Chunk](r, 0), httpapitest.Value[domain.RetrievalTrace](r, 1), r.Err
}

type fakeAssignments struct{ *httpapitest.Script }

var _ v2.Assignments = fakeAssignments{}

func (f fakeAssignments) Assign(_ context.Context, ws *domain.Workspace, id, assignee string, actor *domain.Member) (domain.Conversation, error) {
	r := f.Call("Assignments.Assign", ws.ID, id, assignee, actor)
	return httpapitest.Value[domain.Conversation](r, 0), r.Err
}

func (f fakeAssignments) Unassign(_ context.Context, ws *domain.Workspace, id string, actor *domain.Member) (domain.Conversation, error) {
	r := f.Call("Assignments.Unassign", ws.ID, id, actor)
	return httpapitest.Value[domain.Conversation](r, 0), r.Err
}

type fakeHumanReplies struct{ *httpapitest.Script }

var _ v2.HumanReplies = fakeHumanReplies{}

func (f fakeHumanReplies) PostHumanMessage(_ context.Context, ws *domain.Workspace, id string, m handoff.HumanMessage) (domain.Message, error) {
	r := f.Call("HumanReplies.PostHumanMessage", ws.ID, id, m)
	return httpapitest.Value[domain.Message](r, 0), r.Err
}

func (f fakeHumanReplies) SetStatus(_ context.Context, ws *domain.Workspace, id string, to domain.ConversationStatus) (domain.Conversation, error) {
	r := f.Call("HumanReplies.SetStatus", ws.ID, id, to)
	return httpapitest.Value[domain.Conversation](r, 0), r.Err
}

type fakeIntegrations struct{ *httpapitest.Script }

var _ v2.Integrations = fakeIntegrations{}

func (f fakeIntegrations) Integrations(_ context.Context, ws string) (domain.Workspace, error) {
	r := f.Call("Integrations.Integrations", ws)
	return httpapitest.Value[domain.Workspace](r, 0), r.Err
}

func (f fakeIntegrations) SetIntegrations(_ context.Context, ws *domain.Workspace, change delivery.IntegrationsChange) (domain.Workspace, string, error) {
	r := f.Call("Integrations.SetIntegrations", ws.ID, change)
	return httpapitest.Value[domain.Workspace](r, 0), httpapitest.Value[string](r, 1), r.Err
}

func (f fakeIntegrations) RotateSigningSecret(_ context.Context, ws string) (domain.Workspace, error) {
	r := f.Call("Integrations.RotateSigningSecret", ws)
	return httpapitest.Value[domain.Workspace](r, 0), r.Err
}

type fakeDeliveryLog struct{ *httpapitest.Script }

var _ v2.DeliveryLog = fakeDeliveryLog{}

func (f fakeDeliveryLog) List(_ context.Context, ws string, filter domain.DeliveryFilter, page domain.PageRequest) (domain.Page[domain.Delivery], error) {
	r := f.Call("DeliveryLog.List", ws, filter, page)
	return httpapitest.Value[domain.Page[domain.Delivery]](r, 0), r.Err
}

func (f fakeDeliveryLog) Get(_ context.Context, ws, id string) (domain.Delivery, []domain.DeliveryAttempt, error) {
	r := f.Call("DeliveryLog.Get", ws, id)
	return httpapitest.Value[domain.Delivery](r, 0), httpapitest.Value[[]domain.DeliveryAttempt](r, 1), r.Err
}

func (f fakeDeliveryLog) Retry(_ context.Context, ws, id string) (domain.Delivery, error) {
	r := f.Call("DeliveryLog.Retry", ws, id)
	return httpapitest.Value[domain.Delivery](r, 0), r.Err
}

type fakeRelay struct{ *httpapitest.Script }

var _ sse.Opener = fakeRelay{}

func (f fakeRelay) Open(_ context.Context, req relay.Request) (sse.LiveStream, error) {
	r := f.Call("Relay.Open", req)
	if r.Err != nil {
		return nil, r.Err
	}
	return httpapitest.Value[*httpapitest.LiveStream](r, 0), nil
}

type fakeRatedAnswers struct{ *httpapitest.Script }

var _ v2.RatedAnswers = fakeRatedAnswers{}

func (f fakeRatedAnswers) List(_ context.Context, ws string, filter feedback.ListFilter, page domain.PageRequest) (domain.Page[domain.RatedAnswer], error) {
	r := f.Call("RatedAnswers.List", ws, filter, page)
	return httpapitest.Value[domain.Page[domain.RatedAnswer]](r, 0), r.Err
}

// newApp serves every v2 route, as routes.go lists them, on fakes scripted
// by s, for the principal httpapitest.Principal.
func newApp(t testing.TB, s *httpapitest.Script) *httpapitest.App {
	t.Helper()
	return buildApp(t, s, fakeReports{s})
}

// newAppWithoutReports is the app of a server built without reports.
func newAppWithoutReports(t testing.TB, s *httpapitest.Script) *httpapitest.App {
	t.Helper()
	return buildApp(t, s, nil)
}

func buildApp(t testing.TB, s *httpapitest.Script, reports v2.Reports) *httpapitest.App {
	t.Helper()
	p := httpapitest.Principal()
	app := httpapitest.New(t, &p)
	d := wire.NewDecoder()
	agents := v2.NewAgentHandlers(fakeAgents{s}, fakeSources{s}, d, "https://concierge.example")
	conversations := v2.NewConversationHandlers(fakeConversations{s})
	chats := v2.NewChatHandlers(fakeChat{s}, fakeRetrieval{s}, d)
	handoffs := v2.NewHandoffHandlers(fakeHumanReplies{s}, d)
	assignments := v2.NewAssignmentHandlers(fakeAssignments{s}, d)
	integrations := v2.NewIntegrationHandlers(fakeIntegrations{s}, d)
	deliveries := v2.NewDeliveryHandlers(fakeDeliveryLog{s})
	events := v2.NewEventHandlers(sse.NewFollower(fakeRelay{s}))
	ratings := v2.NewFeedbackHandlers(fakeRatedAnswers{s})
	replies := v2.NewSavedReplyHandlers(fakeSavedReplies{s}, d)
	suggestions := v2.NewSuggestionHandlers(fakeSuggestions{s}, d)
	analytics := v2.NewReportHandlers(reports, fakeAgents{s})

	r := app.Group("/api/v2")
	r.Get("/agents", agents.List)
	r.Post("/agents", agents.Create)
	r.Get("/agents/:slug", agents.Get)
	r.Patch("/agents/:slug", agents.Update)
	r.Delete("/agents/:slug", agents.Delete)
	r.Post("/agents/:slug/sources", agents.CreateSource)
	r.Get("/agents/:slug/sources", agents.ListSources)
	r.Get("/agents/:slug/sources/:id", agents.GetSource)
	r.Post("/agents/:slug/sources/:id/reindex", agents.ReindexSource)
	r.Delete("/agents/:slug/sources/:id", agents.DeleteSource)
	r.Get("/conversations", conversations.List)
	r.Get("/conversations/:id", conversations.Get)
	r.Get("/conversations/:id/messages/:messageId/trace", conversations.MessageTrace)
	r.Post("/chat", chats.Chat)
	r.Post("/agents/:slug/retrieve", chats.Retrieve)
	r.Post("/conversations/:id/messages", handoffs.PostMessage)
	r.Post("/conversations/:id/status", handoffs.SetStatus)
	r.Put("/conversations/:id/assignee", assignments.SetAssignee)
	r.Post("/conversations/:id/suggested-reply", suggestions.Suggest)
	r.Get("/integrations", integrations.Get)
	r.Patch("/integrations", integrations.Update)
	r.Post("/integrations/signing-secret", integrations.RotateSigningSecret)
	r.Get("/deliveries", deliveries.List)
	r.Get("/deliveries/:id", deliveries.Get)
	r.Post("/deliveries/:id/retry", deliveries.Retry)
	r.Get("/conversations/:id/events", events.Follow)
	r.Get("/feedback", ratings.List)
	r.Get("/saved-replies", replies.List)
	r.Post("/saved-replies", replies.Create)
	r.Get("/saved-replies/:id", replies.Get)
	r.Patch("/saved-replies/:id", replies.Update)
	r.Delete("/saved-replies/:id", replies.Delete)
	r.Get("/analytics/report", analytics.Report)
	r.Get("/analytics/report.csv", analytics.CSV)
	return app
}

type fakeReports struct{ *httpapitest.Script }

var _ v2.Reports = fakeReports{}

func (f fakeReports) Report(_ context.Context, ws string, req report.Request) (domain.Report, error) {
	r := f.Call("Reports.Report", ws, req)
	return httpapitest.Value[domain.Report](r, 0), r.Err
}

type fakeSavedReplies struct{ *httpapitest.Script }

var _ v2.SavedReplies = fakeSavedReplies{}

func (f fakeSavedReplies) List(_ context.Context, a savedreply.Actor, req savedreply.ListRequest) (domain.Page[domain.SavedReply], error) {
	r := f.Call("SavedReplies.List", a, req)
	return httpapitest.Value[domain.Page[domain.SavedReply]](r, 0), r.Err
}

func (f fakeSavedReplies) Get(_ context.Context, a savedreply.Actor, id string) (domain.SavedReply, error) {
	r := f.Call("SavedReplies.Get", a, id)
	return httpapitest.Value[domain.SavedReply](r, 0), r.Err
}

func (f fakeSavedReplies) Create(_ context.Context, a savedreply.Actor, d savedreply.Draft) (domain.SavedReply, error) {
	r := f.Call("SavedReplies.Create", a, d)
	return httpapitest.Value[domain.SavedReply](r, 0), r.Err
}

func (f fakeSavedReplies) Update(_ context.Context, a savedreply.Actor, id string, p savedreply.Patch) (domain.SavedReply, error) {
	r := f.Call("SavedReplies.Update", a, id, p)
	return httpapitest.Value[domain.SavedReply](r, 0), r.Err
}

func (f fakeSavedReplies) Delete(_ context.Context, a savedreply.Actor, id string) error {
	return f.Call("SavedReplies.Delete", a, id).Err
}

type fakeSuggestions struct{ *httpapitest.Script }

var _ v2.Suggestions = fakeSuggestions{}

func (f fakeSuggestions) Suggest(_ context.Context, ws *domain.Workspace, id string) (chat.Suggestion, error) {
	r := f.Call("Suggestions.Suggest", ws.ID, id)
	return httpapitest.Value[chat.Suggestion](r, 0), r.Err
}
