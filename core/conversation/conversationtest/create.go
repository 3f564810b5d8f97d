package conversationtest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

var createCases = []contractCase{
	{"CreateConversation stores what both lookups read back", func(t *testing.T, f *fixture) {
		conv := domain.NewConversation(f.ws, &f.agent, "user-42", t0)
		conv.LastMessage = "kept as given"
		if err := f.Store.CreateConversation(f.ctx, &conv); err != nil {
			t.Fatal(err)
		}
		if conv.CreatedAt != micro(t0) || conv.LastActivityAt != micro(t0) {
			t.Errorf("the caller's times were not truncated to what is stored: %+v", conv)
		}
		for name, get := range map[string]func() (domain.Conversation, error){
			"GetConversation":          func() (domain.Conversation, error) { return f.Store.GetConversation(f.ctx, f.ws, conv.ID) },
			"GetConversationBySession": func() (domain.Conversation, error) { return f.Store.GetConversationBySession(f.ctx, conv.ID) },
		} {
			if got, err := get(); err != nil || !reflect.DeepEqual(got, conv) {
				t.Errorf("%s = %+v, %v; want %+v", name, got, err, conv)
			}
		}
	}},

	{"CreateConversation keeps a playground conversation's channel", func(t *testing.T, f *fixture) {
		conv := domain.NewConversation(f.ws, &f.agent, "", t0)
		conv.Channel = domain.ChannelPlayground
		if err := f.Store.CreateConversation(f.ctx, &conv); err != nil {
			t.Fatal(err)
		}
		if got := f.get(t, conv.ID); got.Channel != domain.ChannelPlayground {
			t.Errorf("GetConversation: channel %q, want PLAYGROUND", got.Channel)
		}
		page, err := f.Store.ListConversations(f.ctx, f.ws, domain.ConversationFilter{}, domain.PageRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Items {
			if c.ID == conv.ID && c.Channel != domain.ChannelPlayground {
				t.Errorf("ListConversations: channel %q, want PLAYGROUND", c.Channel)
			}
		}
	}},

	{"CreateConversation refuses an agent that is not the workspace's", func(t *testing.T, f *fixture) {
		other := f.NewWorkspace(t)
		foreign := f.NewAgent(t, other, "support")
		ghost := f.agent
		ghost.ID = domain.NewID(domain.PrefixAgent)
		wrongSlug := f.agent
		wrongSlug.Slug = "sales"
		f.NewAgent(t, f.ws, "sales") // the slug exists, but is another agent's
		for name, agent := range map[string]domain.Agent{"another workspace's agent": foreign, "unknown agent": ghost, "slug of another agent": wrongSlug} {
			c := domain.NewConversation(f.ws, &agent, "", t0)
			if err := f.Store.CreateConversation(f.ctx, &c, delivery(c, domain.EventConversationCreated)); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s: err = %v, want not found", name, err)
			}
			if _, err := f.Store.GetConversationBySession(f.ctx, c.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s: the refused conversation was stored: %v", name, err)
			}
		}
		if n := f.outbox(t); n != 0 {
			t.Errorf("refused creations wrote %d deliveries", n)
		}
	}},

	// Undocumented: an id that exists is domain.ErrConflict.
	{"CreateConversation writes its deliveries, and nothing for an id that exists", func(t *testing.T, f *fixture) {
		c := domain.NewConversation(f.ws, &f.agent, "", t0)
		if err := f.Store.CreateConversation(f.ctx, &c, delivery(c, domain.EventConversationCreated)); err != nil {
			t.Fatal(err)
		}
		if n := f.outbox(t); n != 1 {
			t.Fatalf("outbox has %d rows, want 1", n)
		}
		if err := f.Store.CreateConversation(f.ctx, &c, delivery(c, domain.EventConversationCreated)); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("same id again: err = %v, want conflict", err)
		}
		if n := f.outbox(t); n != 1 {
			t.Errorf("outbox has %d rows after a refused creation, want 1", n)
		}
	}},

	{"GetConversation is scoped by workspace; both lookups miss unknown ids", func(t *testing.T, f *fixture) {
		other := f.NewWorkspace(t)
		if _, err := f.Store.GetConversation(f.ctx, other, f.conv.ID); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another workspace: err = %v, want not found", err)
		}
		unknown := domain.NewID(domain.PrefixSession)
		if _, err := f.Store.GetConversation(f.ctx, f.ws, unknown); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("unknown id: err = %v, want not found", err)
		}
		if _, err := f.Store.GetConversationBySession(f.ctx, unknown); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("unknown session: err = %v, want not found", err)
		}
	}},

	{"StartConversation stores the conversation with its first messages", func(t *testing.T, f *fixture) {
		conv := domain.NewConversation(f.ws, &f.agent, "user-1", t0)
		turn := exchange(f.ws, conv.ID, t0.Add(time.Second))
		ds := []domain.Delivery{delivery(conv, domain.EventConversationCreated), delivery(conv, domain.EventMessageCreated)}
		stored, err := f.Store.StartConversation(f.ctx, &conv, turn, ds...)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != 2 || stored[0].ID != turn[0].ID || stored[1].ID != turn[1].ID || stored[1].Trace != turn[1].Trace {
			t.Fatalf("stored = %+v", stored)
		}
		got, err := f.Store.GetConversation(f.ctx, f.ws, conv.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.MessageCount != 2 || got.LastMessage != turn[1].Content || got.LastActivityAt != micro(turn[1].CreatedAt) ||
			got.AgentSlug != "support" || got.VerifiedUserID != "user-1" || got.Status != domain.StatusAI || got.CreatedAt != micro(t0) {
			t.Errorf("conversation = %+v", got)
		}
		if conv != got {
			t.Errorf("the caller's conversation %+v, stored %+v", conv, got)
		}
		// What the call returns is what a read gives back, the trace aside.
		read := f.messages(t, conv.ID)
		if len(read) != 2 {
			t.Fatalf("read %d messages", len(read))
		}
		for i := range stored {
			if want := asRead(stored[i]); !reflect.DeepEqual(read[i], want) {
				t.Errorf("read %+v\nwant %+v", read[i], want)
			}
		}
		if n := f.outbox(t); n != 2 {
			t.Errorf("outbox has %d rows, want 2", n)
		}
	}},

	// Undocumented: StartConversation stores no contact (the conversation
	// is new: nobody asked for a person yet).
	{"StartConversation stores no contact", func(t *testing.T, f *fixture) {
		conv := domain.NewConversation(f.ws, &f.agent, "", t0)
		conv.ContactName, conv.ContactEmail, conv.ContactNote = "Ada", "ada@example.com", "call me"
		if _, err := f.Store.StartConversation(f.ctx, &conv, []domain.Message{newMessage(f.ws, conv.ID, domain.RoleUser, "hi", t0)}); err != nil {
			t.Fatal(err)
		}
		if got := f.get(t, conv.ID); got.ContactName != "" || got.ContactEmail != "" || got.ContactNote != "" {
			t.Errorf("stored contact %q %q %q", got.ContactName, got.ContactEmail, got.ContactNote)
		}
	}},

	{"StartConversation refuses an agent that is not the workspace's and stores nothing", func(t *testing.T, f *fixture) {
		other := f.NewWorkspace(t)
		for name, agent := range map[string]domain.Agent{
			"agent of another workspace":   f.NewAgent(t, other, "support"),
			"slug that is not the agent's": {ID: f.agent.ID, WorkspaceID: f.ws, Slug: "sales"},
		} {
			c := domain.NewConversation(f.ws, &agent, "", t0)
			m := newMessage(f.ws, c.ID, domain.RoleUser, "hi", t0)
			if _, err := f.Store.StartConversation(f.ctx, &c, []domain.Message{m}, delivery(c, domain.EventConversationCreated)); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s: err = %v, want not found", name, err)
			}
			if _, err := f.Store.GetConversationBySession(f.ctx, c.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s: a refused start stored its conversation: %v", name, err)
			}
		}
		if n := f.outbox(t); n != 0 {
			t.Errorf("refused starts wrote %d deliveries", n)
		}
	}},

	// Undocumented: batches are of one conversation, without inbound
	// events' messages; anything else is refused (an error of no domain
	// kind: a programming error) and nothing is stored.
	{"StartConversation and AppendMessages refuse what they cannot batch", func(t *testing.T, f *fixture) {
		other := f.newConversation(t, f.ws, f.agent, t0)
		tests := []struct {
			name  string
			spoil func(turn []domain.Message) []domain.Message
		}{
			{"none", func([]domain.Message) []domain.Message { return nil }},
			{"an inbound event's message", func(turn []domain.Message) []domain.Message {
				turn[0].InboundEventID = domain.NewID(domain.PrefixInboundEvent)
				return turn
			}},
			{"two conversations", func(turn []domain.Message) []domain.Message {
				turn[1].ConversationID = other.ID
				return turn
			}},
		}
		for _, tt := range tests {
			if _, err := f.Store.AppendMessages(f.ctx, tt.spoil(exchange(f.ws, f.conv.ID, t0)), ""); err == nil {
				t.Errorf("%s: appended", tt.name)
			}
			conv := domain.NewConversation(f.ws, &f.agent, "", t0)
			if _, err := f.Store.StartConversation(f.ctx, &conv, tt.spoil(exchange(f.ws, conv.ID, t0))); err == nil {
				t.Errorf("%s: started", tt.name)
			}
			if _, err := f.Store.GetConversation(f.ctx, f.ws, conv.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s: a refused start stored the conversation: %v", tt.name, err)
			}
		}
		conv := domain.NewConversation(f.ws, &f.agent, "", t0)
		if _, err := f.Store.StartConversation(f.ctx, &conv, exchange(f.ws, other.ID, t0)); err == nil {
			t.Error("started with another conversation's messages")
		}
		for _, id := range []string{f.conv.ID, other.ID} {
			if got := f.get(t, id); got.MessageCount != 0 {
				t.Errorf("a refused batch stored messages: %+v", got)
			}
		}
	}},
}
