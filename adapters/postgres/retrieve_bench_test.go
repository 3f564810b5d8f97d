package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// BenchmarkRetrieve measures one retrieval over an agent of 1,000 sources,
// after the statement is warm (PostgreSQL caches a generic plan after five
// executions on a connection).
func BenchmarkRetrieve(b *testing.B) {
	ctx := context.Background()
	pg := pgtest.NewDB(b)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	clock := domain.SystemClock{}
	ws := domain.Workspace{ID: domain.NewID(domain.PrefixWorkspace), Name: "bench", Plan: domain.PlanStandard, WebhookSecret: domain.NewSecret(domain.PrefixWebhookSecret), CreatedAt: clock.Now(), UpdatedAt: clock.Now()}
	key, _ := domain.NewAPIKey(ws.ID, "k", clock.Now())
	if err := store.CreateWorkspace(ctx, ws, key); err != nil {
		b.Fatal(err)
	}
	agent := domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: ws.ID, Slug: "support", Name: "Support", CreatedAt: clock.Now(), UpdatedAt: clock.Now()}
	if err := store.CreateAgent(ctx, &agent); err != nil {
		b.Fatal(err)
	}
	topics := []string{"shipping", "returns", "invoices", "passwords", "warranty", "payments", "accounts", "delivery", "discounts", "subscriptions"}
	for i := range 1000 {
		t := topics[i%10]
		src := domain.Source{ID: domain.NewID(domain.PrefixSource), WorkspaceID: ws.ID, AgentID: agent.ID, Type: domain.SourceText, Status: domain.SourceReady,
			Name:      fmt.Sprintf("Guide %d: %s", i, t),
			Content:   fmt.Sprintf("Article %d about %s. Customers asking about %s should know that requests are handled within %d business days.", i, t, t, 1+i%7),
			CreatedAt: clock.Now(), UpdatedAt: clock.Now()}
		if err := store.CreateSource(ctx, &src); err != nil {
			b.Fatal(err)
		}
		chunk := domain.StoredChunk{ChunkDraft: domain.ChunkDraft{Heading: src.Name, Text: src.Content, Tokens: 30}, ID: domain.NewID(domain.PrefixChunk), ContentHash: src.ID}
		ref := domain.SourceRef{WorkspaceID: ws.ID, SourceID: src.ID}
		if _, ok, err := store.CompleteIndexing(ctx, ref, domain.IndexResult{Embedder: "bench", ChunkCount: 1, At: clock.Now()}, []domain.StoredChunk{chunk}); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
	// A knowledge base at rest: autovacuum (tuned by migration 00003) has
	// refreshed the index statistics the planner relies on.
	if err := db.Exec("VACUUM ANALYZE chunks").Error; err != nil {
		b.Fatal(err)
	}
	const q = "How long do returns take?"
	for range 20 {
		if _, err := store.SearchChunks(ctx, ws.ID, agent.ID, q, 5); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		chunks, err := store.SearchChunks(ctx, ws.ID, agent.ID, q, 5)
		if err != nil || len(chunks) == 0 {
			b.Fatalf("%d chunks, %v", len(chunks), err)
		}
	}
}
