package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// GetConversation returns domain.ErrNotFound unless the conversation
// belongs to the workspace.
func (s *Conversations) GetConversation(ctx context.Context, workspaceID, id string) (domain.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return domain.Conversation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, id)
	if c == nil {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return c.conv, nil
}

// GetConversationBySession returns the conversation with the id, whatever
// its workspace, or domain.ErrNotFound.
func (s *Conversations) GetConversationBySession(ctx context.Context, sessionID string) (domain.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return domain.Conversation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[sessionID]
	if !ok {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return c.conv, nil
}

// ListConversations returns a page ordered by (last activity, id), newest
// first.
func (s *Conversations) ListConversations(ctx context.Context, workspaceID string, filter domain.ConversationFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	if err := ctx.Err(); err != nil {
		return domain.Page[domain.Conversation]{}, err
	}
	s.mu.Lock()
	var items []domain.Conversation
	for _, c := range s.convs {
		cv := c.conv
		if cv.WorkspaceID != workspaceID || (filter.AgentID != "" && cv.AgentID != filter.AgentID) ||
			(filter.Status != "" && cv.Status != filter.Status) ||
			(filter.AssigneeID != "" && cv.AssigneeID != filter.AssigneeID) ||
			(filter.Unassigned && cv.AssigneeID != "") ||
			(!filter.ActiveFrom.IsZero() && cv.LastActivityAt.Before(dbTime(filter.ActiveFrom))) ||
			(!filter.ActiveBefore.IsZero() && !cv.LastActivityAt.Before(dbTime(filter.ActiveBefore))) ||
			!c.matches(filter) {
			continue
		}
		if a := page.After; a != nil && !before(cv.LastActivityAt, cv.ID, dbTime(a.Time), a.ID) {
			continue
		}
		items = append(items, cv)
	}
	s.mu.Unlock()
	slices.SortFunc(items, func(a, b domain.Conversation) int {
		return -cmp.Or(a.LastActivityAt.Compare(b.LastActivityAt), cmp.Compare(a.ID, b.ID))
	})
	return makePage(items, pageLimit(page), func(c domain.Conversation) domain.Position {
		return domain.Position{Time: c.LastActivityAt, ID: c.ID}
	}), nil
}

// matches checks the filters on the conversation's messages and contact
// (fallback, rating, text query) as PostgreSQL's counters and ILIKE do.
// This store keeps no feedback (it is no ports.FeedbackStore), so a rating
// filter matches nothing.
func (c *conversation) matches(filter domain.ConversationFilter) bool {
	if filter.Rating != "" {
		return false
	}
	var fallbacks int
	found := filter.Query == "" || contains(c.conv.ContactName, filter.Query) || contains(c.conv.ContactEmail, filter.Query)
	for _, m := range c.messages {
		if m.Role == domain.RoleAssistant && m.FallbackReason != domain.FallbackNone {
			fallbacks++
		}
		if !found && m.Role != domain.RoleSystem && contains(m.Content, filter.Query) {
			found = true
		}
	}
	switch {
	case filter.Fallback == domain.FallbackFilterSome && fallbacks == 0,
		filter.Fallback == domain.FallbackFilterNone && fallbacks > 0:
		return false
	}
	return found
}

// contains reports whether s contains query, ignoring case.
func contains(s, query string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(query))
}

// before reports whether (t, id) sorts before (at, atID).
func before(t time.Time, id string, at time.Time, atID string) bool {
	return t.Before(at) || (t.Equal(at) && id < atID)
}

// RecentMessages returns up to limit of the conversation's latest
// messages, oldest first; an unknown conversation has none.
func (s *Conversations) RecentMessages(ctx context.Context, workspaceID, conversationID string, limit int) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, conversationID)
	if c == nil {
		return []domain.Message{}, nil
	}
	return latest(domain.Public(c.messages), limit), nil
}

// latest copies up to limit of msgs' last ones (all of them when limit is
// negative, as an SQL LIMIT of NULL).
func latest(msgs []domain.Message, limit int) []domain.Message {
	if limit >= 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	out := make([]domain.Message, len(msgs))
	for i, m := range msgs {
		out[i] = cloneMessage(m)
	}
	return out
}

// HandoffTranscript returns the conversation's latest messages and its
// message count, read together. Returns domain.ErrNotFound unless the
// conversation belongs to the workspace.
func (s *Conversations) HandoffTranscript(ctx context.Context, workspaceID, conversationID string, limit int) (domain.HandoffTranscript, error) {
	if err := ctx.Err(); err != nil {
		return domain.HandoffTranscript{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, conversationID)
	if c == nil {
		return domain.HandoffTranscript{}, domain.NotFound("conversation")
	}
	return domain.HandoffTranscript{Messages: latest(domain.Public(c.messages), limit), MessageCount: c.conv.MessageCount}, nil
}

// ListMessages returns a page of a conversation's messages in append
// order. Returns domain.ErrNotFound unless the conversation belongs to the
// workspace, and domain.ErrInvalidInput for a cursor that is not one of its
// messages.
func (s *Conversations) ListMessages(ctx context.Context, workspaceID, conversationID string, page domain.PageRequest) (domain.Page[domain.Message], error) {
	if err := ctx.Err(); err != nil {
		return domain.Page[domain.Message]{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, conversationID)
	if c == nil {
		return domain.Page[domain.Message]{}, domain.NotFound("conversation")
	}
	msgs := c.messages
	if page.After != nil {
		i := slices.IndexFunc(msgs, func(m domain.Message) bool { return m.ID == page.After.ID })
		if i < 0 {
			return domain.Page[domain.Message]{}, domain.InvalidField("cursor", "is not a position in this conversation")
		}
		msgs = msgs[i+1:]
	}
	limit := pageLimit(page)
	return makePage(latest(msgs[:min(len(msgs), limit+1)], -1), limit, func(m domain.Message) domain.Position {
		return domain.Position{Time: m.CreatedAt, ID: m.ID}
	}), nil
}

// MessagesFrom returns up to limit (at least one) of the conversation's
// messages in append order from messageID on. Returns domain.ErrNotFound
// unless the conversation belongs to the workspace and, when messageID is
// set, has that message.
func (s *Conversations) MessagesFrom(ctx context.Context, workspaceID, conversationID, messageID string, limit int) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, conversationID)
	if c == nil {
		if messageID != "" {
			return nil, domain.NotFound("message")
		}
		return nil, domain.NotFound("conversation")
	}
	msgs := c.messages
	if messageID != "" {
		i := slices.IndexFunc(msgs, func(m domain.Message) bool { return m.ID == messageID })
		if i < 0 {
			return nil, domain.NotFound("message")
		}
		msgs = msgs[i:]
	}
	return latest(msgs[:min(len(msgs), max(limit, 1))], -1), nil
}

// MessageTrace returns the retrieval trace stored with a message. Returns
// domain.ErrNotFound unless the message belongs to the conversation and
// workspace and has a trace.
func (s *Conversations) MessageTrace(ctx context.Context, workspaceID, conversationID, messageID string) (domain.RetrievalTrace, error) {
	if err := ctx.Err(); err != nil {
		return domain.RetrievalTrace{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ref, ok := s.messages[messageID]
	if !ok || ref.conv.conv.WorkspaceID != workspaceID || ref.conv.conv.ID != conversationID {
		return domain.RetrievalTrace{}, domain.NotFound("message")
	}
	t, ok := s.traces[messageID]
	if !ok {
		return domain.RetrievalTrace{}, domain.NotFound("retrieval trace")
	}
	// Traces stored before questions were kept searched the question as
	// asked, as the PostgreSQL store reads them.
	if t.Question == "" {
		t.Question = t.Query
	}
	t.Focus, t.FeatureNames, t.Missing = slices.Clone(t.Focus), slices.Clone(t.FeatureNames), slices.Clone(t.Missing)
	t.AnswerFeatureNames, t.AnswerFeatures = slices.Clone(t.AnswerFeatureNames), slices.Clone(t.AnswerFeatures)
	t.Candidates = append([]domain.TraceCandidate{}, t.Candidates...)
	return t, nil
}

// pageLimit is the number of items a page request gets: the default when
// unset, never more than the maximum.
func pageLimit(req domain.PageRequest) int {
	switch {
	case req.Limit <= 0:
		return domain.DefaultPageLimit
	case req.Limit > domain.MaxPageLimit:
		return domain.MaxPageLimit
	default:
		return req.Limit
	}
}

// makePage cuts items, in page order, to a page of limit with its Next.
func makePage[T any](items []T, limit int, position func(T) domain.Position) domain.Page[T] {
	page := domain.Page[T]{Items: items, HasMore: len(items) > limit}
	if page.Items == nil {
		page.Items = []T{}
	}
	if page.HasMore {
		page.Items = items[:limit]
		next := position(page.Items[limit-1])
		page.Next = &next
	}
	return page
}
