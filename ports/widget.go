package ports

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// WidgetAgents finds the agent behind a public widget address
// (/chat/{slug}), which is service-wide: no workspace scopes it.
type WidgetAgents interface {
	// GetAgentByWidgetSlug returns the agent holding the widget slug.
	// Returns domain.ErrNotFound when no agent holds it.
	GetAgentByWidgetSlug(ctx context.Context, slug string) (domain.Agent, error)
	// GetAgentByGlobalID returns the agent with the id, whatever its
	// workspace. Returns domain.ErrNotFound when there is none.
	GetAgentByGlobalID(ctx context.Context, id string) (domain.Agent, error)
}

// FeedbackStore keeps visitors' ratings of answers, on the answers.
type FeedbackStore interface {
	// SetFeedback stores fb on the message, or clears its feedback when fb
	// is nil. Returns domain.ErrNotFound unless the message belongs to the
	// conversation and workspace, and domain.ErrFeedbackNotAnswer (an
	// ErrInvalidInput) when it is not an ASSISTANT message.
	SetFeedback(ctx context.Context, workspaceID, conversationID, messageID string, fb *domain.Feedback) error
	// ListFeedback returns a page of the workspace's rated answers, most
	// recently rated first, ordered by (rating time, message id).
	ListFeedback(ctx context.Context, workspaceID string, filter domain.FeedbackFilter, page domain.PageRequest) (domain.Page[domain.RatedAnswer], error)
}
