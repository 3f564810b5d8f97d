package memory_test

import (
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/memory"
	"github.com/conciergehq/concierge/core/conversation/conversationtest"
	"github.com/conciergehq/concierge/core/domain"
)

func TestConversationStoreContract(t *testing.T) {
	conversationtest.RunStoreContract(t, func(t *testing.T) conversationtest.Harness {
		store := memory.NewConversations()
		return conversationtest.Harness{
			Store:        store,
			NewWorkspace: func(*testing.T) string { return domain.NewID(domain.PrefixWorkspace) },
			NewAgent: func(_ *testing.T, workspaceID, slug string) domain.Agent {
				a := domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: workspaceID, Slug: slug}
				store.AddAgent(a)
				return a
			},
			Outbox: func(_ *testing.T, workspaceID string) []string {
				var ids []string
				for _, d := range store.Deliveries() {
					if d.WorkspaceID == workspaceID {
						ids = append(ids, d.ID)
					}
				}
				return ids
			},
		}
	})
}

// The knobs the contract does not cover: seeding, failing writes and a
// concurrent change, which unit tests of core packages use.
func TestTestingKnobs(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	agent := domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: domain.NewID(domain.PrefixWorkspace), Slug: "support"}
	seed := func(store *memory.Conversations, status domain.ConversationStatus) domain.Conversation {
		c := domain.NewConversation(agent.WorkspaceID, &agent, "", at)
		c.Status = status
		store.Put(c, domain.Message{ID: domain.NewID(domain.PrefixMessage), Role: domain.RoleUser, Content: "hello", CreatedAt: at})
		got, _ := store.Conversation(c.ID)
		return got
	}

	t.Run("Put seeds a conversation in any state without an agent check", func(t *testing.T) {
		store := memory.NewConversations()
		c := seed(store, domain.StatusHuman)
		if c.Status != domain.StatusHuman || c.MessageCount != 1 || c.LastMessage != "hello" {
			t.Errorf("seeded %+v", c)
		}
		msgs := store.Messages(c.ID)
		if len(msgs) != 1 || msgs[0].WorkspaceID != c.WorkspaceID || msgs[0].ConversationID != c.ID {
			t.Errorf("messages %+v", msgs)
		}
		c.Status = domain.StatusResolved
		store.Put(c)
		if got, _ := store.Conversation(c.ID); got.Status != domain.StatusResolved || len(store.Messages(c.ID)) != 1 {
			t.Errorf("after a second Put: %+v, %d messages", got, len(store.Messages(c.ID)))
		}
	})

	t.Run("Writes counts the writes that stored messages, Len the conversations", func(t *testing.T) {
		store := memory.NewConversations()
		store.AddAgent(agent)
		conv := domain.NewConversation(agent.WorkspaceID, &agent, "", at)
		msg := func(content string) domain.Message {
			return domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: conv.WorkspaceID, ConversationID: conv.ID,
				Role: domain.RoleUser, Content: content, CreatedAt: at}
		}
		if _, err := store.StartConversation(t.Context(), &conv, []domain.Message{msg("a"), msg("b")}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.AppendMessages(t.Context(), []domain.Message{msg("c"), msg("d")}, ""); err != nil {
			t.Fatal(err)
		}
		if _, _, err := store.AppendMessage(t.Context(), msg("e"), domain.StatusHuman); !errors.Is(err, domain.ErrStatusChanged) {
			t.Fatal(err)
		}
		next := conv
		next.Status = domain.StatusResolved
		notice := domain.StatusChange{WorkspaceID: conv.WorkspaceID, ConversationID: conv.ID, To: domain.StatusResolved,
			Notice: domain.NewStatusNotice(next, domain.StatusResolved, "", at)}
		if _, _, err := store.ChangeStatus(t.Context(), notice); err != nil {
			t.Fatal(err)
		}
		if n := store.Writes(); n != 2 || store.Len() != 1 {
			t.Errorf("%d writes, %d conversations; want 2 and 1", n, store.Len())
		}
	})

	t.Run("Delete removes a conversation with its messages", func(t *testing.T) {
		store := memory.NewConversations()
		c := seed(store, domain.StatusAI)
		q := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: c.WorkspaceID, ConversationID: c.ID,
			Role: domain.RoleUser, Content: "q", ReplyID: domain.NewID(domain.PrefixMessage), IdempotencyKey: "api:k",
			InboundEventID: domain.NewID(domain.PrefixInboundEvent), CreatedAt: at}
		if _, _, err := store.AppendMessage(t.Context(), q, ""); err != nil {
			t.Fatal(err)
		}
		store.Delete(c.ID)
		if _, ok := store.Conversation(c.ID); ok || len(store.Messages("")) != 0 {
			t.Error("the conversation or its messages are still stored")
		}
		if _, err := store.GetConversation(t.Context(), c.WorkspaceID, c.ID); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("GetConversation: %v", err)
		}
		if _, _, err := store.KeyedQuestion(t.Context(), c.WorkspaceID, "api:k"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("KeyedQuestion: %v", err)
		}
		if got, _ := store.AnswersStartedBefore(t.Context(), at.Add(time.Hour), 10); len(got) != 0 {
			t.Errorf("answers in progress %+v", got)
		}
	})

	t.Run("FailMessages fails the whole write", func(t *testing.T) {
		store := memory.NewConversations()
		c := seed(store, domain.StatusResolved)
		boom := errors.New("connection reset")
		store.FailMessages(func(m domain.Message) error {
			if m.Content == "fail" {
				return boom
			}
			return nil
		})
		msg := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: c.WorkspaceID, ConversationID: c.ID,
			Role: domain.RoleUser, Content: "fail", CreatedAt: at}
		next := c
		next.Status = domain.StatusAI
		change := domain.StatusChange{WorkspaceID: c.WorkspaceID, ConversationID: c.ID, To: domain.StatusAI,
			Notice: domain.NewStatusNotice(next, domain.StatusAI, "", at), Message: &msg, MessageFirst: true,
			Deliveries: []domain.Delivery{domain.NewDelivery(domain.TargetEvents, domain.EventMessageCreated, c, at)}}
		writes := map[string]func() error{
			"AppendMessage": func() error {
				_, _, err := store.AppendMessage(t.Context(), msg, "")
				return err
			},
			"AppendMessages": func() error {
				ok := msg
				ok.ID, ok.Content = domain.NewID(domain.PrefixMessage), "fine"
				_, err := store.AppendMessages(t.Context(), []domain.Message{ok, msg}, "")
				return err
			},
			"ChangeStatus": func() error {
				_, _, err := store.ChangeStatus(t.Context(), change)
				return err
			},
		}
		for name, write := range writes {
			if err := write(); !errors.Is(err, boom) {
				t.Errorf("%s: err = %v, want the injected one", name, err)
			}
		}
		if got, _ := store.Conversation(c.ID); got != c || len(store.Messages("")) != 1 || len(store.Deliveries()) != 0 {
			t.Errorf("failed writes stored: %+v, %d messages, %d deliveries", got, len(store.Messages("")), len(store.Deliveries()))
		}
		store.FailMessages(nil)
		if _, changed, err := store.ChangeStatus(t.Context(), change); err != nil || !changed || len(store.Deliveries()) != 1 {
			t.Errorf("after the failure: %v, %v", changed, err)
		}
	})

	t.Run("BeforeChange plays a concurrent change", func(t *testing.T) {
		store := memory.NewConversations()
		c := seed(store, domain.StatusHuman)
		calls := 0
		store.BeforeChange(func(c *domain.Conversation) {
			calls++
			c.Status = domain.StatusAI // handed back to the agent meanwhile
		})
		change := domain.StatusChange{WorkspaceID: c.WorkspaceID, ConversationID: c.ID, To: domain.StatusResolved,
			From: []domain.ConversationStatus{domain.StatusHuman}, Notice: domain.NewStatusNotice(c, domain.StatusResolved, "", at)}
		got, changed, err := store.ChangeStatus(t.Context(), change)
		if err != nil || changed || got.Status != domain.StatusAI || calls != 1 {
			t.Errorf("ChangeStatus = %+v, %v, %v after %d calls; want the concurrent state, unchanged", got, changed, err, calls)
		}
		if stored, _ := store.Conversation(c.ID); stored.Status != domain.StatusAI {
			t.Errorf("stored %+v", stored)
		}
	})
}
