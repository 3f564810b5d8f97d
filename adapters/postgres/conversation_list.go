package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/conciergehq/concierge/core/domain"
)

// listConversationsQuery builds the keyset query of ListConversations; its
// predicates keep to the (workspace, [agent|status,] last_activity_at, id)
// indexes, and to the partial ones of conversations with a fallback or a
// rating, which the scale test checks with EXPLAIN.
//
// A text query is two searches, each a keyset page of its own: the
// contact's name and email, and the messages' text (an EXISTS, which the
// planner runs either as a walk of the list's order checking each
// conversation's messages, for a common word, or from the messages'
// trigram index, for a rare one). Written as one OR it could do neither:
// an OR with a subquery is checked row by row. Their union, ordered again,
// is the page.
func listConversationsQuery(workspaceID string, filter domain.ConversationFilter, after *domain.Position, limit int) (string, []any) {
	const selectFrom = "SELECT " + conversationListColumns + " FROM conversations AS c WHERE c.workspace_id = $1"
	if filter.Query == "" {
		k := newKeysetQuery(selectFrom, workspaceID)
		listConditions(k, filter)
		return k.page("c.last_activity_at", "c.id", after, limit)
	}
	// $2 is the pattern; the conditions, position and limit follow, and
	// both searches use the same parameters.
	k := newKeysetQuery("", workspaceID, containsPattern(filter.Query))
	listConditions(k, filter)
	rest, args := k.page("c.last_activity_at", "c.id", after, limit)
	contact := selectFrom + ` AND (c.contact_name || ' ' || c.contact_email) ILIKE $2` + rest
	messages := selectFrom + ` AND EXISTS (SELECT 1 FROM messages AS m
	WHERE m.workspace_id = c.workspace_id AND m.conversation_id = c.id AND m.role <> 'SYSTEM' AND m.content ILIKE $2)` + rest
	return "(" + contact + ")\nUNION\n(" + messages + ")\n" +
		fmt.Sprintf("ORDER BY last_activity_at DESC, id DESC LIMIT $%d", len(args)), args
}

// listConditions adds the filters but the text query.
func listConditions(k *keysetQuery, filter domain.ConversationFilter) {
	k.filter("c.agent_id", filter.AgentID)
	k.filter("c.status", string(filter.Status))
	k.filter("c.assignee_id", filter.AssigneeID)
	if filter.Unassigned {
		k.and("c.assignee_id IS NULL")
	}
	k.since("c.last_activity_at", filter.ActiveFrom)
	k.until("c.last_activity_at", filter.ActiveBefore)
	switch filter.Fallback {
	case domain.FallbackFilterSome:
		k.and("c.fallback_count > 0")
	case domain.FallbackFilterNone:
		k.and("c.fallback_count = 0")
	}
	switch filter.Rating {
	case domain.RatingUp:
		k.and("c.thumbs_up > 0")
	case domain.RatingDown:
		k.and("c.thumbs_down > 0")
	}
}

// containsPattern is the ILIKE pattern of text containing s: its own %, _
// and \ are escaped, so they match themselves.
func containsPattern(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s) + "%"
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
	var verified, assignee *string
	for rows.Next() {
		items = append(items, domain.Conversation{WorkspaceID: workspaceID})
		c := &items[len(items)-1]
		if err := rows.Scan(&c.ID, &c.AgentID, &c.AgentSlug, &channel, &status,
			&verified, &c.ContactName, &c.ContactEmail, &assignee, &c.LastMessage, &c.MessageCount, &c.LastActivityAt, &c.CreatedAt); err != nil {
			return domain.Page[domain.Conversation]{}, dbError("list conversations", err)
		}
		c.Channel, c.Status, c.VerifiedUserID, c.AssigneeID = domain.Channel(channel), domain.ConversationStatus(status), deref(verified), deref(assignee)
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
