package postgres

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// listConversationsQuery builds the keyset query of ListConversations; its
// predicates keep to the (workspace, [agent|status,] last_activity_at, id)
// indexes, which the scale test checks with EXPLAIN.
func listConversationsQuery(workspaceID string, filter domain.ConversationFilter, after *domain.Position, limit int) (string, []any) {
	k := newKeysetQuery("SELECT "+conversationListColumns+" FROM conversations AS c WHERE c.workspace_id = $1", workspaceID)
	k.filter("c.agent_id", filter.AgentID)
	k.filter("c.status", string(filter.Status))
	k.since("c.last_activity_at", filter.ActiveFrom)
	k.until("c.last_activity_at", filter.ActiveBefore)
	return k.page("c.last_activity_at", "c.id", after, limit)
}

// ListConversations returns a page ordered by (last_activity_at, id), newest
// first. Each filter shape has an index ending in that order, so a page reads
// about limit+1 index entries whatever the table size.
func (s *Store) ListConversations(ctx context.Context, workspaceID string, filter domain.ConversationFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	// The busiest read of the API: plain pgx with positional scanning, which
	// costs a fraction of gorm's reflection per row.
	limit := pageLimit(page)
	query, args := listConversationsQuery(workspaceID, filter, page.After, limit+1)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return domain.Page[domain.Conversation]{}, dbError("list conversations", err)
	}
	defer rows.Close()
	// Scan straight into the page's items: no row structs to copy, and no
	// per-row heap escape.
	items := make([]domain.Conversation, 0, limit+1)
	var channel, status string
	var verified *string
	for rows.Next() {
		items = append(items, domain.Conversation{WorkspaceID: workspaceID})
		c := &items[len(items)-1]
		if err := rows.Scan(&c.ID, &c.AgentID, &c.AgentSlug, &channel, &status,
			&verified, &c.ContactName, &c.ContactEmail, &c.LastMessage, &c.MessageCount, &c.LastActivityAt, &c.CreatedAt); err != nil {
			return domain.Page[domain.Conversation]{}, dbError("list conversations", err)
		}
		c.Channel, c.Status, c.VerifiedUserID = domain.Channel(channel), domain.ConversationStatus(status), deref(verified)
		c.LastActivityAt, c.CreatedAt = c.LastActivityAt.UTC(), c.CreatedAt.UTC()
	}
	if err := rows.Err(); err != nil {
		return domain.Page[domain.Conversation]{}, dbError("list conversations", err)
	}
	out := domain.Page[domain.Conversation]{Items: items, HasMore: len(items) > limit}
	if out.HasMore {
		out.Items = items[:limit]
		next := conversationPosition(out.Items[limit-1])
		out.Next = &next
	}
	return out, nil
}
