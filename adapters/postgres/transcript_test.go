package postgres_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// MessagesFrom reads a conversation in append order from any of its
// messages, with what the replay needs (token ends, status), and nothing of
// other conversations or workspaces.
func TestMessagesFrom(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	store := pgtest.NewStore(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	other, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	conv := newConversation(t, store, ws.ID, agent, t0)
	empty := newConversation(t, store, ws.ID, agent, t0)
	elsewhere := newConversation(t, store, ws.ID, agent, t0)

	var ids []string
	for i, m := range []domain.Message{
		newMessage(ws.ID, conv.ID, domain.RoleUser, "refund?", t0),
		func() domain.Message {
			m := newMessage(ws.ID, conv.ID, domain.RoleAssistant, "Thirty days.", t0)
			m.TokenEnds = []int{7, 12}
			return m
		}(),
		func() domain.Message {
			m := newMessage(ws.ID, conv.ID, domain.RoleSystem, "A person will answer.", t0)
			m.Status = domain.StatusHandoffRequested
			return m
		}(),
		newMessage(ws.ID, conv.ID, domain.RoleHuman, "Ana here.", t0),
	} {
		stored, _, err := store.AppendMessage(ctx, m, "")
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		ids = append(ids, stored.ID)
	}
	if _, _, err := store.AppendMessage(ctx, newMessage(ws.ID, elsewhere.ID, domain.RoleUser, "other", t0), ""); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		ws, conv  string
		from      string
		limit     int
		want      []string
		wantError error
	}{
		{name: "from the start", ws: ws.ID, conv: conv.ID, limit: 10, want: ids},
		{name: "from the reply", ws: ws.ID, conv: conv.ID, from: ids[1], limit: 10, want: ids[1:]},
		{name: "a page", ws: ws.ID, conv: conv.ID, from: ids[1], limit: 2, want: ids[1:3]},
		{name: "from the last", ws: ws.ID, conv: conv.ID, from: ids[3], limit: 10, want: ids[3:]},
		{name: "empty conversation", ws: ws.ID, conv: empty.ID, limit: 10, want: nil},
		{name: "unknown message", ws: ws.ID, conv: conv.ID, from: domain.NewID(domain.PrefixMessage), limit: 10, wantError: domain.ErrNotFound},
		{name: "message of another conversation", ws: ws.ID, conv: empty.ID, from: ids[0], limit: 10, wantError: domain.ErrNotFound},
		{name: "another workspace", ws: other.ID, conv: conv.ID, limit: 10, wantError: domain.ErrNotFound},
		{name: "another workspace, from a message", ws: other.ID, conv: conv.ID, from: ids[0], limit: 10, wantError: domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := store.MessagesFrom(ctx, tt.ws, tt.conv, tt.from, tt.limit)
			if tt.wantError != nil {
				if !errors.Is(err, tt.wantError) {
					t.Fatalf("err = %v, want %v", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, m := range got {
				gotIDs = append(gotIDs, m.ID)
			}
			if !slices.Equal(gotIDs, tt.want) {
				t.Fatalf("ids %v, want %v", gotIDs, tt.want)
			}
		})
	}
	all, err := store.MessagesFrom(ctx, ws.ID, conv.ID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(all[1].TokenEnds, []int{7, 12}) || all[2].Status != domain.StatusHandoffRequested || all[3].Role != domain.RoleHuman {
		t.Errorf("replay fields lost: %+v", all)
	}
}
