package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

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
	return searchQuery(workspaceID, filter, after, nil, limit)
}

// searchQuery is listConversationsQuery whose page, when notBefore is set,
// ends at that position (included): a text search's window.
func searchQuery(workspaceID string, filter domain.ConversationFilter, after, notBefore *domain.Position, limit int) (string, []any) {
	const selectFrom = "SELECT " + conversationListColumns + ", " + outcomeColumn + " FROM conversations AS c WHERE c.workspace_id = $1"
	if filter.Query == "" {
		k := newKeysetQuery(selectFrom, workspaceID)
		listConditions(k, filter)
		return k.page("c.last_activity_at", "c.id", after, limit)
	}
	// $2 is the pattern; the conditions, position and limit follow, and
	// both searches use the same parameters.
	k := newKeysetQuery("", workspaceID, containsPattern(filter.Query))
	listConditions(k, filter)
	k.notBefore("c.last_activity_at", "c.id", notBefore)
	rest, args := k.page("c.last_activity_at", "c.id", after, limit)
	contact := selectFrom + ` AND (c.contact_name || ' ' || c.contact_email) ILIKE $2` + rest
	messages := selectFrom + ` AND EXISTS (SELECT 1 FROM messages AS m
	WHERE m.workspace_id = c.workspace_id AND m.conversation_id = c.id AND m.role <> 'SYSTEM' AND m.content ILIKE $2)` + rest
	return "(" + contact + ")\nUNION\n(" + messages + ")\n" +
		fmt.Sprintf("ORDER BY last_activity_at DESC, id DESC LIMIT $%d", len(args)), args
}

// searchWindow is how many conversations of a list (its filters, after
// its cursor), newest first, a text search walks in order before it asks
// the trigram indexes for the older ones.
//
// The planner chooses between walking the list's order and checking each
// conversation, and reading every match from the trigram indexes and
// sorting them, by how many matches it expects, as if they were spread
// evenly over time. They seldom are: a customer who left, a product
// renamed, a batch of contacts imported at once. A search for matches
// that are all old then walked the whole list (BenchmarkConsolePages
// measured a contact search at p99 83 ms, walking 50,000 conversations
// for 26 matches). Walking at most this many, then reading the older
// matches from the indexes, bounds both ways.
const searchWindow = 2000

// searchWindowEdgeQuery finds the searchWindow-th conversation of the list
// (the filters but the text, after the cursor): the oldest one a search
// walks. No row means the whole list fits in the window.
func searchWindowEdgeQuery(workspaceID string, filter domain.ConversationFilter, after *domain.Position) (string, []any) {
	k := newKeysetQuery("SELECT c.last_activity_at, c.id FROM conversations AS c WHERE c.workspace_id = $1", workspaceID)
	listConditions(k, filter)
	q, args := k.page("c.last_activity_at", "c.id", after, 1)
	return q + fmt.Sprintf(" OFFSET %d", searchWindow-1), args
}

// searchOlderQuery finds the text search's matches older than the window
// (after the position edge), from the trigram indexes only: each search
// reads its matches in a MATERIALIZED common table expression without an
// order, so the planner cannot walk the list instead.
//
// The contact search reads the conversations themselves, with every
// filter, so its newest limit are sorted from the matches alone. Joining
// the matching ids back to the conversations instead made the planner
// walk the whole list again to merge them in its order: 85-100 ms for the
// 3,707 matches of "customer4" among 100,000 conversations, against
// 20-35 ms this way (EXPLAIN ANALYZE on the console benchmark's data).
// The message search can only give conversation ids; it keeps the join.
func searchOlderQuery(workspaceID string, filter domain.ConversationFilter, edge domain.Position, limit int) (string, []any) {
	k := newKeysetQuery("", workspaceID, containsPattern(filter.Query))
	listConditions(k, filter)
	k.before("c.last_activity_at", "c.id", &edge)
	conditions := k.sql.String()
	k.args = append(k.args, limit)
	order := fmt.Sprintf(" ORDER BY c.last_activity_at DESC, c.id DESC LIMIT $%d", len(k.args))
	// The outcome is read for the page only, outside the matches: the
	// contact search's matches may be thousands.
	const selectFrom = "SELECT " + conversationListColumns + " FROM conversations AS c WHERE c.workspace_id = $1"
	return `WITH contact_hits AS MATERIALIZED (
	` + selectFrom + ` AND (c.contact_name || ' ' || c.contact_email) ILIKE $2` + conditions + `
), message_hits AS MATERIALIZED (
	SELECT m.conversation_id FROM messages AS m WHERE m.workspace_id = $1 AND m.role <> 'SYSTEM' AND m.content ILIKE $2
)
SELECT c.*, ` + outcomeColumn + ` FROM (
	(SELECT * FROM contact_hits AS c` + order + `)
	UNION
	(` + selectFrom + ` AND c.id IN (SELECT conversation_id FROM message_hits)` + conditions + order + `)
	ORDER BY last_activity_at DESC, id DESC` + fmt.Sprintf(" LIMIT $%d", len(k.args)) + `
) AS c
ORDER BY c.last_activity_at DESC, c.id DESC`, k.args
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
	if filter.ReportFiltered() {
		reportConditions(k, filter)
		return
	}
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

// reportConditions adds the report filters as one condition on the
// conversation's rollup row (conversation_facts), so a report's number and
// its list count the same conversations: one that is not rolled up yet
// (or a playground's) is in neither. The fallback and rating filters read
// the rollup too, not the conversation's live counters, which may be
// ahead of it by a sweep.
//
// The condition is a scalar subquery, one primary key probe per
// conversation the list walks in its own order, and deliberately not an
// EXISTS: the planner turned an EXISTS into a join that read every
// matching row of the range from an index of the facts' start days and
// sorted them, which cost 130 ms a page for a fallback reason over 90
// days of 100,000 conversations (BenchmarkReports), where walking the
// list stops after the page's matches. The walk's own worst case is a
// rare figure over an old range (every conversation since is probed);
// docs/benchmarks.md has both.
func reportConditions(k *keysetQuery, filter domain.ConversationFilter) {
	var cond strings.Builder
	cond.WriteString("(SELECT true")
	param := func(v any) string {
		k.args = append(k.args, v)
		return fmt.Sprintf("$%d", len(k.args))
	}
	// The range is the conversation's own start (conversation_facts'
	// started_on is its day), exact when a bound is not a midnight.
	k.since("c.created_at", filter.StartedFrom)
	k.until("c.created_at", filter.StartedBefore)
	switch filter.Outcome {
	case "":
	case domain.OutcomeUndecided:
		cond.WriteString(" AND f.outcome IS NULL")
	default:
		fmt.Fprintf(&cond, " AND f.outcome = %s", param(string(filter.Outcome)))
	}
	if filter.FallbackReason != "" {
		fmt.Fprintf(&cond, " AND %s = ANY (f.fallback_reasons)", param(string(filter.FallbackReason)))
	}
	if filter.HandedOff {
		cond.WriteString(" AND f.handed_off")
	}
	switch filter.Timed {
	case domain.DurationFirstReply:
		cond.WriteString(" AND f.first_reply_seconds IS NOT NULL")
	case domain.DurationResolution:
		cond.WriteString(" AND f.resolution_seconds IS NOT NULL")
	}
	switch filter.Fallback {
	case domain.FallbackFilterSome:
		cond.WriteString(" AND cardinality(f.fallback_reasons) > 0")
	case domain.FallbackFilterNone:
		cond.WriteString(" AND cardinality(f.fallback_reasons) = 0")
	}
	switch filter.Rating {
	case domain.RatingUp:
		cond.WriteString(" AND f.thumbs_up > 0")
	case domain.RatingDown:
		cond.WriteString(" AND f.thumbs_down > 0")
	}
	k.and(cond.String() + " FROM conversation_facts AS f WHERE f.conversation_id = c.id AND f.workspace_id = c.workspace_id) IS TRUE")
}

// containsPattern is the ILIKE pattern of text containing s: its own %, _
// and \ are escaped, so they match themselves.
func containsPattern(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s) + "%"
}

// ListConversations returns a page ordered by (last_activity_at, id), newest
// first. Each filter shape has an index ending in that order, so a page reads
// about limit+1 index entries whatever the table size. A text search walks
// at most searchWindow conversations so, then reads older matches from the
// trigram indexes (searchConversations).
func (s *Store) ListConversations(ctx context.Context, workspaceID string, filter domain.ConversationFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	limit := pageLimit(page)
	var items []domain.Conversation
	var err error
	if filter.Query == "" {
		query, args := listConversationsQuery(workspaceID, filter, page.After, limit+1)
		items, err = s.scanConversations(ctx, workspaceID, query, args, limit+1)
	} else {
		items, err = s.searchConversations(ctx, workspaceID, filter, page.After, limit+1)
	}
	if err != nil {
		return domain.Page[domain.Conversation]{}, dbError("list conversations", err)
	}
	return conversationPage(items, limit), nil
}

// conversationPage is the page of up to limit+1 conversations read for a
// page of limit: the extra one, when there, says there is more.
func conversationPage(items []domain.Conversation, limit int) domain.Page[domain.Conversation] {
	out := domain.Page[domain.Conversation]{Items: items, HasMore: len(items) > limit}
	if out.HasMore {
		out.Items = items[:limit]
		next := conversationPosition(out.Items[limit-1])
		out.Next = &next
	}
	return out
}

// searchConversations reads up to want conversations of a text search in
// two steps (see searchWindow): the matches among the newest searchWindow
// conversations of the list, walked in order; if they are too few, the
// older matches from the trigram indexes. Both steps read the same list,
// so together they are the page one query would give.
func (s *Store) searchConversations(ctx context.Context, workspaceID string, filter domain.ConversationFilter, after *domain.Position, want int) ([]domain.Conversation, error) {
	query, args := searchWindowEdgeQuery(workspaceID, filter, after)
	var edge domain.Position
	err := s.pool.QueryRow(ctx, query, args...).Scan(&edge.Time, &edge.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		// The whole list fits in the window.
		query, args = searchQuery(workspaceID, filter, after, nil, want)
		return s.scanConversations(ctx, workspaceID, query, args, want)
	}
	if err != nil {
		return nil, err
	}
	query, args = searchQuery(workspaceID, filter, after, &edge, want)
	newer, err := s.scanConversations(ctx, workspaceID, query, args, want)
	if err != nil || len(newer) >= want {
		return newer, err
	}
	query, args = searchOlderQuery(workspaceID, filter, edge, want-len(newer))
	older, err := s.scanConversations(ctx, workspaceID, query, args, want-len(newer))
	return append(newer, older...), err
}

// scanConversations runs a query of conversationListColumns and reads up
// to capacity rows. The busiest read of the API: plain pgx with positional
// scanning, which costs a fraction of gorm's reflection per row.
func (s *Store) scanConversations(ctx context.Context, workspaceID, query string, args []any, capacity int) ([]domain.Conversation, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// The API's lists also select the outcome (outcomeColumn, last); the
	// inbox's do not.
	fields := rows.FieldDescriptions()
	withOutcome := len(fields) > 0 && fields[len(fields)-1].Name == "outcome"
	return scanConversationRows(rows, workspaceID, capacity, withOutcome)
}

// conversationRows are rows of conversationListColumns: pgx's, or
// database/sql's for a statement in a gorm transaction.
type conversationRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanConversationRows reads rows of conversationListColumns of the
// workspace, followed by outcomeColumn when withOutcome; capacity is how
// many are expected.
func scanConversationRows(rows conversationRows, workspaceID string, capacity int, withOutcome bool) ([]domain.Conversation, error) {
	// Scan straight into the page's items: no row structs to copy, and no
	// per-row heap escape.
	items := make([]domain.Conversation, 0, capacity)
	var channel, status string
	var verified, assignee, outcome *string
	var handoff *time.Time
	for rows.Next() {
		items = append(items, domain.Conversation{WorkspaceID: workspaceID})
		c := &items[len(items)-1]
		dest := []any{&c.ID, &c.AgentID, &c.AgentSlug, &channel, &status,
			&verified, &c.ContactName, &c.ContactEmail, &c.ContactNote, &assignee, &c.LastMessage, &c.MessageCount, &c.LastActivityAt, &c.CreatedAt, &handoff}
		if withOutcome {
			dest = append(dest, &outcome)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		c.Channel, c.Status, c.VerifiedUserID, c.AssigneeID = domain.Channel(channel), domain.ConversationStatus(status), deref(verified), deref(assignee)
		c.Outcome = domain.Outcome(deref(outcome))
		c.LastActivityAt, c.CreatedAt, c.HandoffRequestedAt = c.LastActivityAt.UTC(), c.CreatedAt.UTC(), timeOrZero(handoff)
	}
	return items, rows.Err()
}
