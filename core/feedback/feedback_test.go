package feedback

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/memory"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var now = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return now }

type workspaces struct {
	ports.WorkspaceStore
	ws domain.Workspace
}

func (w workspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	if id == w.ws.ID {
		return w.ws, nil
	}
	return domain.Workspace{}, domain.NotFound("workspace")
}

type agents struct {
	ports.AgentLookups
	byID map[string]domain.Agent
}

func (a agents) GetAgentByID(_ context.Context, _, id string) (domain.Agent, error) {
	if ag, ok := a.byID[id]; ok {
		return ag, nil
	}
	return domain.Agent{}, domain.NotFound("agent")
}

func (a agents) GetAgentBySlug(_ context.Context, _, slug string) (domain.Agent, error) {
	for _, ag := range a.byID {
		if ag.Slug == slug {
			return ag, nil
		}
	}
	return domain.Agent{}, domain.NotFound("agent")
}

// store keeps feedback of the messages it knows, by id; roles says which
// exist and what they are.
type store struct {
	roles map[string]domain.Role // "<conversation>/<message>" -> role
	set   map[string]*domain.Feedback
	list  domain.FeedbackFilter
}

func (s *store) SetFeedback(_ context.Context, _, conversationID, messageID string, fb *domain.Feedback) error {
	role, ok := s.roles[conversationID+"/"+messageID]
	switch {
	case !ok:
		return domain.NotFound("message")
	case role != domain.RoleAssistant:
		return domain.ErrFeedbackNotAnswer
	}
	s.set[messageID] = fb
	return nil
}

func (s *store) ListFeedback(_ context.Context, _ string, f domain.FeedbackFilter, _ domain.PageRequest) (domain.Page[domain.RatedAnswer], error) {
	s.list = f
	return domain.Page[domain.RatedAnswer]{}, nil
}

type fixtureIDs struct {
	session, verified, draftSession, answer, question, otherAnswer string
	ws                                                             domain.Workspace
	agentID                                                        string
}

func fixture(t *testing.T) (*Service, *store, fixtureIDs) {
	t.Helper()
	ws := domain.Workspace{ID: "ws_1", Plan: domain.PlanEnterprise, WebhookSecret: "whsec_1"}
	agent := domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: ws.ID, Slug: "support", Config: domain.AgentConfig{Published: true}}
	draft := domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: ws.ID, Slug: "draft"}
	ids := fixtureIDs{
		session: domain.NewID(domain.PrefixSession), verified: domain.NewID(domain.PrefixSession), draftSession: domain.NewID(domain.PrefixSession),
		answer: domain.NewID(domain.PrefixMessage), question: domain.NewID(domain.PrefixMessage), otherAnswer: domain.NewID(domain.PrefixMessage),
		ws: ws, agentID: agent.ID,
	}
	convs := memory.NewConversations()
	convs.Put(domain.Conversation{ID: ids.session, WorkspaceID: ws.ID, AgentID: agent.ID})
	convs.Put(domain.Conversation{ID: ids.verified, WorkspaceID: ws.ID, AgentID: agent.ID, VerifiedUserID: "u_1"})
	convs.Put(domain.Conversation{ID: ids.draftSession, WorkspaceID: ws.ID, AgentID: draft.ID})
	st := &store{roles: map[string]domain.Role{
		ids.session + "/" + ids.answer:       domain.RoleAssistant,
		ids.session + "/" + ids.question:     domain.RoleUser,
		ids.verified + "/" + ids.otherAnswer: domain.RoleAssistant,
	}, set: map[string]*domain.Feedback{}}
	ags := agents{byID: map[string]domain.Agent{agent.ID: agent, draft.ID: draft}}
	svc := NewService(Deps{
		Agents:    ags,
		Lifecycle: conversation.New(conversation.Deps{Conversations: convs, Workspaces: workspaces{ws: ws}, Agents: ags, Clock: fixedClock{}}),
		Feedback:  st, Clock: fixedClock{},
	})
	return svc, st, ids
}

func TestRate(t *testing.T) {
	svc, st, ids := fixture(t)
	otherUser := "eyJ1c2VySWQiOiJ1XzIifQ" // {"userId":"u_2"}
	tests := []struct {
		name    string
		req     Request
		wantErr error
		want    domain.Feedback
	}{
		{name: "thumbs up", req: Request{Session: conversation.SessionRef{ID: ids.session}, MessageID: ids.answer, Rating: "up"},
			want: domain.Feedback{Rating: domain.RatingUp, UpdatedAt: now}},
		{name: "thumbs down with a comment", req: Request{Session: conversation.SessionRef{ID: ids.session}, MessageID: ids.answer, Rating: "down", Comment: "outdated"},
			want: domain.Feedback{Rating: domain.RatingDown, Comment: "outdated", UpdatedAt: now}},
		{name: "cleared", req: Request{Session: conversation.SessionRef{ID: ids.session}, MessageID: ids.answer}, want: domain.Feedback{UpdatedAt: now}},
		{name: "a question", req: Request{Session: conversation.SessionRef{ID: ids.session}, MessageID: ids.question, Rating: "up"}, wantErr: domain.ErrFeedbackNotAnswer},
		{name: "another session's answer", req: Request{Session: conversation.SessionRef{ID: ids.session}, MessageID: ids.otherAnswer, Rating: "up"}, wantErr: domain.ErrNotFound},
		{name: "unknown message", req: Request{Session: conversation.SessionRef{ID: ids.session}, MessageID: domain.NewID(domain.PrefixMessage), Rating: "up"}, wantErr: domain.ErrNotFound},
		{name: "malformed message id", req: Request{Session: conversation.SessionRef{ID: ids.session}, MessageID: "1", Rating: "up"}, wantErr: domain.ErrNotFound},
		{name: "unknown session", req: Request{Session: conversation.SessionRef{ID: domain.NewID(domain.PrefixSession)}, MessageID: ids.answer, Rating: "up"}, wantErr: domain.ErrNotFound},
		{name: "unpublished agent", req: Request{Session: conversation.SessionRef{ID: ids.draftSession}, MessageID: ids.answer, Rating: "up"}, wantErr: domain.ErrNotFound},
		{name: "another verified user", req: Request{
			Session:   conversation.SessionRef{ID: ids.verified, IdentityHeader: otherUser, SignatureHeader: domain.SignIdentity(ids.ws.WebhookSecret, otherUser)},
			MessageID: ids.otherAnswer, Rating: "up",
		}, wantErr: domain.ErrNotFound},
		{name: "bad signature", req: Request{
			Session:   conversation.SessionRef{ID: ids.verified, IdentityHeader: otherUser, SignatureHeader: domain.SignIdentity("whsec_x", otherUser)},
			MessageID: ids.otherAnswer, Rating: "up",
		}, wantErr: domain.ErrUnauthorized},
		{name: "bad rating", req: Request{Session: conversation.SessionRef{ID: ids.session}, MessageID: ids.answer, Rating: "meh"}, wantErr: domain.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := svc.Rate(t.Context(), tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Rate = %+v, %v; want %+v", got, err, tt.want)
			}
			if stored := st.set[tt.req.MessageID]; (stored == nil) != (tt.want.Rating == "") || (stored != nil && *stored != tt.want) {
				t.Fatalf("stored %+v", stored)
			}
		})
	}
}

func TestList(t *testing.T) {
	svc, st, ids := fixture(t)
	tests := []struct {
		name    string
		filter  ListFilter
		want    domain.FeedbackFilter
		wantErr error
	}{
		{name: "everything", want: domain.FeedbackFilter{}},
		{name: "by agent and rating", filter: ListFilter{AgentSlug: "support", Rating: "down"}, want: domain.FeedbackFilter{AgentID: ids.agentID, Rating: domain.RatingDown}},
		{name: "unknown agent", filter: ListFilter{AgentSlug: "nobody"}, wantErr: domain.ErrNotFound},
		{name: "malformed agent", filter: ListFilter{AgentSlug: "No Body"}, wantErr: domain.ErrNotFound},
		{name: "bad rating", filter: ListFilter{Rating: "sideways"}, wantErr: domain.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st.list = domain.FeedbackFilter{Rating: "unset"}
			_, err := svc.List(t.Context(), ids.ws.ID, tt.filter, domain.PageRequest{})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || st.list != tt.want {
				t.Fatalf("List: %v, filter %+v, want %+v", err, st.list, tt.want)
			}
		})
	}
}
