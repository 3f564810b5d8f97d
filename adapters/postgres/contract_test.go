package postgres_test

import (
	"testing"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/conversation/conversationtest"
	"github.com/conciergehq/concierge/core/domain"
)

// TestConversationStoreContract runs the conversation stores' contract
// against PostgreSQL: one database for every case, each case in
// workspaces of its own.
func TestConversationStoreContract(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	conversationtest.RunStoreContract(t, func(t *testing.T) conversationtest.Harness {
		return conversationtest.Harness{
			Store: store,
			NewWorkspace: func(t *testing.T) string {
				ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
				return ws.ID
			},
			NewAgent: func(t *testing.T, workspaceID, slug string) domain.Agent {
				return newAgent(t, store, workspaceID, slug, t0)
			},
			Outbox: func(t *testing.T, workspaceID string) []string {
				var ids []string
				page := domain.PageRequest{Limit: domain.MaxPageLimit}
				for {
					got, err := store.ListDeliveries(t.Context(), workspaceID, domain.DeliveryFilter{}, page)
					if err != nil {
						t.Fatal(err)
					}
					for _, d := range got.Items {
						ids = append(ids, d.ID)
					}
					if !got.HasMore {
						return ids
					}
					page.After = got.Next
				}
			},
		}
	})
}
