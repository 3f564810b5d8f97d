package postgres

import (
	"context"
	"fmt"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.InboxStore = (*Store)(nil)

// openStatuses are the states a person handles. Written as literals, not
// parameters, so the planner matches the partial indexes of migration
// 00021 whose predicate is the same list.
const openStatuses = `c.status IN ('HANDOFF_REQUESTED', 'HUMAN')`

// inboxConditions adds a view's conditions to a keyset query of
// conversations AS c. Each view has an index in its order: needs the
// partial index of waiting conversations by request time (00023), resolved the
// status index, open and unassigned the partial index of open
// conversations, mine the partial index of open conversations by assignee.
func inboxConditions(k *keysetQuery, q domain.InboxQuery) {
	switch q.View {
	case domain.InboxNeeds:
		k.and(`c.status = 'HANDOFF_REQUESTED'`)
	case domain.InboxMine:
		k.and(openStatuses)
		k.filter("c.assignee_id", q.UserID)
		if q.UserID == "" {
			k.and("false") // nobody's own conversations
		}
	case domain.InboxUnassigned:
		k.and(openStatuses)
		k.and("c.assignee_id IS NULL")
	case domain.InboxOpen:
		k.and(openStatuses)
	default: // domain.InboxResolved
		k.and(`c.status = 'RESOLVED'`)
	}
	k.filter("c.agent_id", q.AgentID)
}

// inboxListQuery builds a page of a view. A text search is one OR of the
// contact and an EXISTS over the messages: the open views hold the
// conversations people are working on, a few hundred at most, so checking
// each is cheap. Resolved, which grows without bound, searches through
// searchConversations instead (its order is the conversation list's).
func inboxListQuery(workspaceID string, q domain.InboxQuery, after *domain.Position, limit int) (string, []any) {
	k := newKeysetQuery("SELECT "+conversationListColumns+" FROM conversations AS c WHERE c.workspace_id = $1", workspaceID)
	inboxConditions(k, q)
	if q.Query != "" {
		k.args = append(k.args, containsPattern(q.Query))
		n := len(k.args)
		k.and(fmt.Sprintf(`((c.contact_name || ' ' || c.contact_email) ILIKE $%d OR EXISTS (SELECT 1 FROM messages AS m
	WHERE m.workspace_id = c.workspace_id AND m.conversation_id = c.id AND m.role <> 'SYSTEM' AND m.content ILIKE $%d))`, n, n))
	}
	if !q.View.Oldest() {
		return k.page("c.last_activity_at", "c.id", after, limit)
	}
	// Needs a person: the longest wait first, by when the handoff was
	// requested, not by last activity (a visitor who keeps typing keeps
	// their place). The column is never NULL in this view (the CHECK of
	// migration 00023), so the row comparison holds for every row.
	if after != nil {
		k.args = append(k.args, dbTime(after.Time), after.ID)
		k.and(fmt.Sprintf("(c.handoff_requested_at, c.id) > ($%d, $%d)", len(k.args)-1, len(k.args)))
	}
	k.args = append(k.args, limit)
	fmt.Fprintf(&k.sql, " ORDER BY c.handoff_requested_at, c.id LIMIT $%d", len(k.args))
	return k.sql.String(), k.args
}

// inboxPosition is where a page of a view ends, in the view's own order.
func inboxPosition(view domain.InboxView, c domain.Conversation) domain.Position {
	if view.Oldest() {
		return domain.Position{Time: c.HandoffRequestedAt, ID: c.ID}
	}
	return conversationPosition(c)
}

// ListInbox returns a page of an inbox view (ports.InboxStore).
func (s *Store) ListInbox(ctx context.Context, workspaceID string, q domain.InboxQuery, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	if q.View == domain.InboxResolved && q.Query != "" {
		return s.ListConversations(ctx, workspaceID, domain.ConversationFilter{
			Status: domain.StatusResolved, AgentID: q.AgentID, Query: q.Query}, page)
	}
	limit := pageLimit(page)
	query, args := inboxListQuery(workspaceID, q, page.After, limit+1)
	items, err := s.scanConversations(ctx, workspaceID, query, args, limit+1)
	if err != nil {
		return domain.Page[domain.Conversation]{}, dbError("list inbox", err)
	}
	out := conversationPage(items, limit)
	if out.Next != nil {
		next := inboxPosition(q.View, out.Items[len(out.Items)-1])
		out.Next = &next
	}
	return out, nil
}

// inboxCountQuery counts every view in one statement: each a count of at
// most domain.InboxCountCap rows read from the view's index, so a tab
// costs the same whatever the table's size.
func inboxCountQuery(workspaceID, userID, agentID string) (string, []any) {
	args := []any{workspaceID}
	agent := ""
	if agentID != "" {
		args = append(args, agentID)
		agent = fmt.Sprintf(" AND c.agent_id = $%d", len(args))
	}
	mine := " AND false"
	if userID != "" {
		args = append(args, userID)
		mine = fmt.Sprintf(" AND c.assignee_id = $%d", len(args))
	}
	count := func(cond, order string) string {
		// The order is the views' index order: without it the planner
		// may take a sequential scan stopping at the cap as cheaper,
		// which holds only while the workspace's rows are dense in the
		// table (the scale test saw it choose one).
		return fmt.Sprintf("(SELECT count(*) FROM (SELECT 1 FROM conversations AS c WHERE c.workspace_id = $1 AND %s%s "+
			"ORDER BY %s LIMIT %d) AS x)", cond, agent, order, domain.InboxCountCap)
	}
	const latest = "c.last_activity_at DESC, c.id DESC"
	return "SELECT " + count(`c.status = 'HANDOFF_REQUESTED'`, "c.handoff_requested_at, c.id") + ", " +
		count(openStatuses+mine, latest) + ", " +
		count(openStatuses+" AND c.assignee_id IS NULL", latest) + ", " +
		count(openStatuses, latest) + ", " +
		count(`c.status = 'RESOLVED'`, latest), args
}

// CountInbox counts the views (ports.InboxStore).
func (s *Store) CountInbox(ctx context.Context, workspaceID, userID, agentID string) (domain.InboxCounts, error) {
	query, args := inboxCountQuery(workspaceID, userID, agentID)
	var needs, mine, unassigned, open, resolved int
	if err := s.pool.QueryRow(ctx, query, args...).Scan(&needs, &mine, &unassigned, &open, &resolved); err != nil {
		return nil, dbError("count inbox", err)
	}
	return domain.InboxCounts{domain.InboxNeeds: needs, domain.InboxMine: mine, domain.InboxUnassigned: unassigned,
		domain.InboxOpen: open, domain.InboxResolved: resolved}, nil
}

// VerifiedUserConversations reads a verified user's latest conversations
// from the partial index of conversations with a verified user
// (ports.InboxStore).
func (s *Store) VerifiedUserConversations(ctx context.Context, workspaceID, verifiedUserID, exceptID string, limit int) ([]domain.Conversation, error) {
	if verifiedUserID == "" || limit <= 0 {
		return nil, nil
	}
	query := "SELECT " + conversationListColumns + ` FROM conversations AS c
	WHERE c.workspace_id = $1 AND c.verified_user_id = $2 AND c.id <> $3
	ORDER BY c.last_activity_at DESC, c.id DESC LIMIT $4`
	items, err := s.scanConversations(ctx, workspaceID, query, []any{workspaceID, verifiedUserID, exceptID, limit}, limit)
	if err != nil {
		return nil, dbError("list a verified user's conversations", err)
	}
	return items, nil
}
