package domain

import "time"

// Channel is how a conversation reaches the service.
type Channel string

// Channels. ChannelChat covers widget, API and webhook conversations;
// ChannelPlayground marks those started in the console's playground, by a
// member trying an agent, so lists and reports can tell them apart.
const (
	ChannelChat       Channel = "CHAT"
	ChannelPlayground Channel = "PLAYGROUND"
)

// ConversationStatus is who answers the conversation.
type ConversationStatus string

// Conversation states: AI -> HANDOFF_REQUESTED -> HUMAN -> RESOLVED; a resolved
// conversation that receives a user message goes back to AI.
const (
	StatusAI               ConversationStatus = "AI"
	StatusHandoffRequested ConversationStatus = "HANDOFF_REQUESTED"
	StatusHuman            ConversationStatus = "HUMAN"
	StatusResolved         ConversationStatus = "RESOLVED"
)

// Conversation is a session: its ID is the sessionId.
type Conversation struct {
	ID          string
	WorkspaceID string
	AgentID     string
	// AgentSlug is filled by stores when they read a conversation.
	AgentSlug      string
	Channel        Channel
	Status         ConversationStatus
	VerifiedUserID string
	// ContactName and ContactEmail are what the visitor gave when asking
	// for a person; ContactNote is the note they wrote in the same form,
	// for the member who answers. A later request's note replaces it.
	ContactName  string
	ContactEmail string
	ContactNote  string
	// AssigneeID is the user id of the member who owns the conversation,
	// "" when nobody does.
	AssigneeID string
	// HandoffRequestedAt is when the conversation last entered
	// HANDOFF_REQUESTED (each request, so one handed off again after being
	// resolved waits from the new one); zero when it never did. It stays
	// after the conversation moves on, so a thread can say when the
	// visitor asked.
	HandoffRequestedAt time.Time
	LastMessage        string
	MessageCount       int
	LastActivityAt     time.Time
	CreatedAt          time.Time
	// Outcome is how the conversation ended (DecideOutcome), as the worker
	// last stored it; "" while undecided.
	Outcome Outcome
}

// NewConversation starts a conversation with an agent.
func NewConversation(workspaceID string, agent *Agent, verifiedUserID string, now time.Time) Conversation {
	return Conversation{
		ID:             NewID(PrefixSession),
		WorkspaceID:    workspaceID,
		AgentID:        agent.ID,
		AgentSlug:      agent.Slug,
		Channel:        ChannelChat,
		Status:         StatusAI,
		VerifiedUserID: verifiedUserID,
		LastActivityAt: now,
		CreatedAt:      now,
	}
}

// ConversationFilter narrows a conversation list.
type ConversationFilter struct {
	// AgentID, when set, keeps only that agent's conversations.
	AgentID string
	// Status, when set, keeps only conversations in that state.
	Status ConversationStatus
	// ActiveFrom and ActiveBefore, when set, keep only conversations
	// whose last activity is at or after ActiveFrom and before
	// ActiveBefore. A range on the list's own order column keeps every
	// filter shape on its (..., last_activity_at, id) index.
	ActiveFrom, ActiveBefore time.Time
	// AssigneeID, when set, keeps only the conversations assigned to that
	// user; Unassigned keeps only those assigned to nobody.
	AssigneeID string
	Unassigned bool
	// Fallback, when set, keeps only conversations where some ASSISTANT
	// answer was the agent's fallback (FallbackFilterSome), or where none
	// was (FallbackFilterNone).
	Fallback FallbackFilter
	// Rating, when set, keeps only conversations with at least one answer
	// the visitor rated so: a thumbs-up (RatingUp) or a thumbs-down
	// (RatingDown). A conversation can have both.
	Rating Rating
	// Query, when set, keeps only conversations whose contact name or
	// email, or the text of one of whose messages, contains it, ignoring
	// case. It is plain text: no wildcards, no operators.
	Query string
	// The report filters (issue 18) keep the conversations a report
	// counted, read from the same per-conversation rollup the report sums
	// (docs/outcomes.md), so a number and its list always agree. A list
	// with any of them set holds only conversations the rollup has counted
	// (never the playground's, nor one started since the worker's last
	// sweep).
	//
	// StartedFrom and StartedBefore, when set, keep conversations that
	// started in [StartedFrom, StartedBefore) (UTC days: a report's range).
	StartedFrom, StartedBefore time.Time
	// Outcome, when set, keeps conversations with that outcome;
	// OutcomeUndecided those without one yet.
	Outcome Outcome
	// FallbackReason, when set, keeps conversations with at least one
	// fallback answer of that reason.
	FallbackReason FallbackReason
	// HandedOff, when true, keeps conversations ever handed to people.
	HandedOff bool
	// Timed, when set, keeps conversations that have that duration in the
	// report: the conversations a median was drawn from.
	Timed ReportDuration
}

// ReportDuration names a duration a report takes the median of.
type ReportDuration string

// The report's durations: a person's first reply after a handoff
// (Report.FirstReply), and the time from the start to resolved
// (Report.Resolution).
const (
	DurationFirstReply ReportDuration = "firstReply"
	DurationResolution ReportDuration = "resolution"
)

// ReportFiltered is whether f narrows by any report filter, so the list
// reads the report's rollup.
func (f ConversationFilter) ReportFiltered() bool {
	return !f.StartedFrom.IsZero() || !f.StartedBefore.IsZero() || f.Outcome != "" ||
		f.FallbackReason != "" || f.HandedOff || f.Timed != ""
}

// FallbackFilter narrows a conversation list by its fallback answers.
type FallbackFilter string

// Fallback filters: any conversation, those with at least one fallback
// answer, those without any.
const (
	FallbackFilterAny  FallbackFilter = ""
	FallbackFilterSome FallbackFilter = "yes"
	FallbackFilterNone FallbackFilter = "no"
)

// Bounds of ConversationFilter.Query, in characters. Fewer than three
// characters cannot be looked up in a trigram index (every message would
// be read); the upper bound only keeps a query a query.
const (
	MinConversationQueryLength = 3
	MaxConversationQueryLength = 200
)
