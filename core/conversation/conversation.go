// Package conversation owns the Conversation aggregate: the Lifecycle every
// capability (the answer engine, handoff, the inbound webhook, the widget,
// feedback, the live relay) finds, opens, appends to, moves, polls and
// publishes conversations through, and the Service of the conversation
// routes (sessions, listing, reading). It imports no capability; they
// import it.
package conversation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Service runs conversation use cases.
type Service struct {
	agents        ports.AgentStore
	conversations ports.ConversationReader
	lifecycle     *Lifecycle
}

// NewService returns a Service. Sessions are opened through lifecycle.
func NewService(agents ports.AgentStore, conversations ports.ConversationReader, lifecycle *Lifecycle) *Service {
	return &Service{agents: agents, conversations: conversations, lifecycle: lifecycle}
}

// StartSession opens a conversation with the agent named by slug, or with the
// workspace's first agent when slug is empty. A verified identity is kept on
// the session. Returns domain.ErrNotFound when the agent does not exist (or the
// workspace has none) or is not published: the session's chat routes, which
// take no key, answer only for a published agent (Lifecycle.Find), so a
// session they would refuse is not opened.
func (s *Service) StartSession(ctx context.Context, ws *domain.Workspace, slug string, identity *domain.Identity) (domain.Conversation, error) {
	agent, err := AgentBySlug(ctx, s.agents, ws.ID, slug)
	if err != nil {
		return domain.Conversation{}, err
	}
	if !agent.Config.Published {
		return domain.Conversation{}, domain.NotFound("published agent")
	}
	return s.lifecycle.Open(ctx, ws, &agent, identity)
}

// ListFilter narrows List by agent slug, status, a range of last
// activity (at or after ActiveFrom, before ActiveBefore), fallback answers
// (domain.FallbackFilter), ratings (a thumbs-up or thumbs-down on some
// answer) and a text query over the contact and the messages; empty
// values match all.
type ListFilter struct {
	AgentSlug                string
	Status                   domain.ConversationStatus
	ActiveFrom, ActiveBefore time.Time
	Fallback                 domain.FallbackFilter
	Rating                   domain.Rating
	Query                    string
	// Assignee is a member's user id, or AssigneeNone for conversations
	// assigned to nobody.
	Assignee string
	// The report filters (issue 18): a report's figure links to the list
	// with its filters. StartedFrom and StartedTo are the first and the
	// last day (UTC midnights, both included) the conversations started
	// on; Outcome an outcome or domain.OutcomeUndecided; FallbackReason a
	// reason of FallbackReasons; HandedOff keeps conversations ever handed
	// to people; Timed those a report's median was drawn from.
	StartedFrom, StartedTo time.Time
	Outcome                domain.Outcome
	FallbackReason         domain.FallbackReason
	HandedOff              bool
	Timed                  domain.ReportDuration
}

// FallbackReasons lists the fallback reasons a list can filter by (and a
// report counts), in the order screens show them.
var FallbackReasons = []domain.FallbackReason{
	domain.FallbackNoKnowledge, domain.FallbackModelDeclined, domain.FallbackModelError, domain.FallbackToolError,
	domain.FallbackEmptyMessage, domain.FallbackPromptInjection, domain.FallbackBlockedTopic, domain.FallbackTooLong,
	domain.FallbackHumanActive, domain.FallbackInterrupted,
}

// ValidOutcomeFilter is whether o names an outcome a list can filter by:
// one of domain.Outcomes or domain.OutcomeUndecided.
func ValidOutcomeFilter(o domain.Outcome) bool {
	return o == domain.OutcomeUndecided || slices.Contains(domain.Outcomes, o)
}

// AssigneeNone is the assignee filter of unassigned conversations.
const AssigneeNone = "none"

// List returns a page of the workspace's conversations, newest activity first.
// A filter value it cannot mean is domain.ErrInvalidInput naming the field
// (status, activeBefore, fallback, rating, q, assignee, startedFrom,
// startedTo, outcome, fallbackReason); an unknown agent slug is
// domain.ErrNotFound.
func (s *Service) List(ctx context.Context, workspaceID string, f ListFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	filter, err := f.validate()
	if err != nil {
		return domain.Page[domain.Conversation]{}, err
	}
	if f.AgentSlug != "" {
		if domain.ValidateSlug(f.AgentSlug) != nil {
			return domain.Page[domain.Conversation]{}, domain.NotFound("agent")
		}
		agent, err := s.agents.GetAgentBySlug(ctx, workspaceID, f.AgentSlug)
		if err != nil {
			return domain.Page[domain.Conversation]{}, err
		}
		filter.AgentID = agent.ID
	}
	return s.conversations.ListConversations(ctx, workspaceID, filter, page)
}

// validate checks every filter but the agent (which needs the store) and
// returns the store's filter without it. The query is trimmed: spaces
// around it are not what anyone searches for.
func (f ListFilter) validate() (domain.ConversationFilter, error) {
	filter := domain.ConversationFilter{Status: f.Status, ActiveFrom: f.ActiveFrom, ActiveBefore: f.ActiveBefore,
		Fallback: f.Fallback, Rating: f.Rating, Query: strings.TrimSpace(f.Query)}
	if !f.ActiveFrom.IsZero() && !f.ActiveBefore.IsZero() && !f.ActiveFrom.Before(f.ActiveBefore) {
		return filter, domain.InvalidField("activeBefore", "must be after the start of the range")
	}
	switch f.Status {
	case "", domain.StatusAI, domain.StatusHandoffRequested, domain.StatusHuman, domain.StatusResolved:
	default:
		return filter, domain.InvalidField("status", "must be one of AI, HANDOFF_REQUESTED, HUMAN, RESOLVED")
	}
	switch f.Fallback {
	case domain.FallbackFilterAny, domain.FallbackFilterSome, domain.FallbackFilterNone:
	default:
		return filter, domain.InvalidField("fallback", "must be yes or no")
	}
	switch {
	case f.Assignee == "":
	case f.Assignee == AssigneeNone:
		filter.Unassigned = true
	case domain.ValidID(domain.PrefixUser, f.Assignee):
		filter.AssigneeID = f.Assignee
	default:
		return filter, domain.InvalidField("assignee", "must be a user id (usr_...) or none")
	}
	switch f.Rating {
	case "", domain.RatingUp, domain.RatingDown:
	default:
		return filter, domain.InvalidField("rating", "must be up or down")
	}
	if err := f.validateReport(&filter); err != nil {
		return filter, err
	}
	if filter.Query != "" {
		if err := domain.ValidateText("q", filter.Query); err != nil {
			return filter, err
		}
		switch n := utf8.RuneCountInString(filter.Query); {
		case n < domain.MinConversationQueryLength:
			return filter, domain.InvalidField("q", fmt.Sprintf("must be at least %d characters", domain.MinConversationQueryLength))
		case n > domain.MaxConversationQueryLength:
			return filter, domain.InvalidField("q", fmt.Sprintf("must be at most %d characters", domain.MaxConversationQueryLength))
		}
	}
	return filter, nil
}

// validateReport checks the report filters into filter: days are UTC
// midnights (the list counts whole days, as reports do), the last not
// before the first, the outcome and the reason names the domain gives.
func (f ListFilter) validateReport(filter *domain.ConversationFilter) error {
	isDay := func(t time.Time) bool { return t.Equal(t.UTC().Truncate(24 * time.Hour)) }
	switch {
	case !f.StartedFrom.IsZero() && !isDay(f.StartedFrom):
		return domain.InvalidField("startedFrom", "must be a day, as 2026-11-01")
	case !f.StartedTo.IsZero() && !isDay(f.StartedTo):
		return domain.InvalidField("startedTo", "must be a day, as 2026-11-30")
	case !f.StartedFrom.IsZero() && !f.StartedTo.IsZero() && f.StartedTo.Before(f.StartedFrom):
		return domain.InvalidField("startedTo", "must not be before startedFrom")
	}
	if !f.StartedFrom.IsZero() {
		filter.StartedFrom = f.StartedFrom.UTC()
	}
	if !f.StartedTo.IsZero() {
		filter.StartedBefore = f.StartedTo.UTC().AddDate(0, 0, 1)
	}
	if f.Outcome != "" && !ValidOutcomeFilter(f.Outcome) {
		names := make([]string, 0, len(domain.Outcomes)+1)
		for _, o := range domain.Outcomes {
			names = append(names, string(o))
		}
		return domain.InvalidField("outcome", "must be one of "+strings.Join(append(names, string(domain.OutcomeUndecided)), ", "))
	}
	if f.FallbackReason != "" && !slices.Contains(FallbackReasons, f.FallbackReason) {
		names := make([]string, 0, len(FallbackReasons))
		for _, r := range FallbackReasons {
			names = append(names, string(r))
		}
		return domain.InvalidField("fallbackReason", "must be one of "+strings.Join(names, ", "))
	}
	switch f.Timed {
	case "", domain.DurationFirstReply, domain.DurationResolution:
	default:
		return domain.InvalidField("timed", "must be one of firstReply, resolution")
	}
	filter.Outcome, filter.FallbackReason, filter.HandedOff, filter.Timed = f.Outcome, f.FallbackReason, f.HandedOff, f.Timed
	return nil
}

// Get returns a conversation of the workspace with a page of its messages,
// oldest first. Returns domain.ErrNotFound for unknown or foreign ids.
func (s *Service) Get(ctx context.Context, workspaceID, id string, page domain.PageRequest) (domain.Conversation, domain.Page[domain.Message], error) {
	if !domain.ValidID(domain.PrefixSession, id) {
		return domain.Conversation{}, domain.Page[domain.Message]{}, domain.NotFound("conversation")
	}
	conv, err := s.conversations.GetConversation(ctx, workspaceID, id)
	if err != nil {
		return domain.Conversation{}, domain.Page[domain.Message]{}, err
	}
	msgs, err := s.conversations.ListMessages(ctx, workspaceID, id, page)
	if err != nil {
		return domain.Conversation{}, domain.Page[domain.Message]{}, err
	}
	return conv, msgs, nil
}

// MessageTrace returns how an answer's knowledge was retrieved. Returns
// domain.ErrNotFound for unknown or foreign ids and for messages without a
// trace (questions, human replies, answers given without retrieval).
func (s *Service) MessageTrace(ctx context.Context, workspaceID, conversationID, messageID string) (domain.RetrievalTrace, error) {
	if !domain.ValidID(domain.PrefixSession, conversationID) || !domain.ValidID(domain.PrefixMessage, messageID) {
		return domain.RetrievalTrace{}, domain.NotFound("message")
	}
	return s.conversations.MessageTrace(ctx, workspaceID, conversationID, messageID)
}
