package inbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/inbox"
	"github.com/conciergehq/concierge/ports"
)

// recordingInbox records the query the service passed on.
type recordingInbox struct {
	got     *domain.InboxQuery
	earlier []string // verifiedUserID, exceptID
}

func (r *recordingInbox) ListInbox(_ context.Context, _ string, q domain.InboxQuery, _ domain.PageRequest) (domain.Page[domain.Conversation], error) {
	r.got = &q
	return domain.Page[domain.Conversation]{}, nil
}

func (r *recordingInbox) CountInbox(_ context.Context, _, userID, agentID string) (domain.InboxCounts, error) {
	r.got = &domain.InboxQuery{UserID: userID, AgentID: agentID}
	return domain.InboxCounts{}, nil
}

func (r *recordingInbox) VerifiedUserConversations(_ context.Context, _, verified, except string, _ int) ([]domain.Conversation, error) {
	r.earlier = []string{verified, except}
	return nil, nil
}

type agents struct{ ports.AgentLookups }

func (agents) GetAgentBySlug(_ context.Context, ws, slug string) (domain.Agent, error) {
	if slug == "support" {
		return domain.Agent{ID: "agt_support", WorkspaceID: ws, Slug: slug}, nil
	}
	return domain.Agent{}, domain.NotFound("agent")
}

type members struct{ ports.MemberStore }

func (members) ListMembers(_ context.Context, ws string) ([]domain.Member, error) {
	return []domain.Member{{WorkspaceID: ws, UserID: "usr_a"}}, nil
}

func TestList(t *testing.T) {
	agent := domain.Member{WorkspaceID: "ws_1", UserID: "usr_me", Role: domain.MemberAgent}
	tests := []struct {
		name      string
		actor     domain.Member
		req       inbox.Request
		want      *domain.InboxQuery
		wantErr   error
		wantField string
	}{
		{"default view is needs", agent, inbox.Request{}, &domain.InboxQuery{View: domain.InboxNeeds, UserID: "usr_me"}, nil, ""},
		{"mine is the actor's", agent, inbox.Request{View: domain.InboxMine}, &domain.InboxQuery{View: domain.InboxMine, UserID: "usr_me"}, nil, ""},
		{"agent slug to id, query trimmed", agent, inbox.Request{View: domain.InboxOpen, AgentSlug: "support", Query: "  parcel "},
			&domain.InboxQuery{View: domain.InboxOpen, UserID: "usr_me", AgentID: "agt_support", Query: "parcel"}, nil, ""},
		{"unknown view", agent, inbox.Request{View: "archived"}, nil, domain.ErrInvalidInput, "view"},
		{"short query", agent, inbox.Request{Query: "ab"}, nil, domain.ErrInvalidInput, "q"},
		{"long query", agent, inbox.Request{Query: strings.Repeat("a", domain.MaxConversationQueryLength+1)}, nil, domain.ErrInvalidInput, "q"},
		{"unknown agent", agent, inbox.Request{AgentSlug: "nobody"}, nil, domain.ErrNotFound, ""},
		{"malformed agent", agent, inbox.Request{AgentSlug: "No Body!"}, nil, domain.ErrNotFound, ""},
		{"a role without conversations", domain.Member{WorkspaceID: "ws_1", UserID: "usr_x", Role: "VIEWER"}, inbox.Request{}, nil, domain.ErrForbidden, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &recordingInbox{}
			s := inbox.NewService(inbox.Deps{Inbox: store, Agents: agents{}, Members: members{}})
			_, err := s.List(context.Background(), tt.actor, tt.req, domain.PageRequest{})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			var v *domain.ValidationError
			if tt.wantField != "" && (!errors.As(err, &v) || v.Fields[tt.wantField] == "") {
				t.Fatalf("err %v, want a validation error on %s", err, tt.wantField)
			}
			switch {
			case tt.want == nil && store.got != nil:
				t.Fatalf("the store was asked %+v", *store.got)
			case tt.want != nil && (store.got == nil || *store.got != *tt.want):
				t.Fatalf("store asked %+v, want %+v", store.got, *tt.want)
			}
		})
	}
}

func TestCountsEarlierTeammates(t *testing.T) {
	ctx := context.Background()
	me := domain.Member{WorkspaceID: "ws_1", UserID: "usr_me", Role: domain.MemberAgent}
	store := &recordingInbox{}
	s := inbox.NewService(inbox.Deps{Inbox: store, Agents: agents{}, Members: members{}})
	if _, err := s.Counts(ctx, me, "support"); err != nil || store.got.UserID != "usr_me" || store.got.AgentID != "agt_support" {
		t.Fatalf("counts: %v %+v", err, store.got)
	}
	if _, err := s.Counts(ctx, me, "nobody"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("counts of an unknown agent: %v", err)
	}
	// No verified user: nothing asked; another workspace's conversation: nothing either.
	if got, err := s.Earlier(ctx, me, domain.Conversation{ID: "ses_1", WorkspaceID: "ws_1"}); err != nil || got != nil || store.earlier != nil {
		t.Fatalf("earlier without a user: %v %v %v", got, err, store.earlier)
	}
	if _, err := s.Earlier(ctx, me, domain.Conversation{ID: "ses_1", WorkspaceID: "ws_2", VerifiedUserID: "u"}); err != nil || store.earlier != nil {
		t.Fatalf("earlier of another workspace: %v %v", err, store.earlier)
	}
	if _, err := s.Earlier(ctx, me, domain.Conversation{ID: "ses_1", WorkspaceID: "ws_1", VerifiedUserID: "u"}); err != nil || store.earlier[0] != "u" || store.earlier[1] != "ses_1" {
		t.Fatalf("earlier: %v %v", err, store.earlier)
	}
	mates, err := s.Teammates(ctx, me)
	if err != nil || len(mates) != 1 {
		t.Fatalf("teammates: %v %v", mates, err)
	}
	if _, err := s.Teammates(ctx, domain.Member{WorkspaceID: "ws_1", Role: "VIEWER"}); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("teammates for no role: %v", err)
	}
}
