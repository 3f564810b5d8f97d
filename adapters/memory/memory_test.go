package memory_test

import (
	"testing"

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
