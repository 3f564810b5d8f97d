package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
)

// FeedbackHandlers serves GET /api/v2/feedback: what visitors said about
// the workspace's answers.
type FeedbackHandlers struct {
	feedback RatedAnswers
}

// NewFeedbackHandlers returns the feedback handlers.
func NewFeedbackHandlers(f RatedAnswers) *FeedbackHandlers {
	return &FeedbackHandlers{feedback: f}
}

// List serves GET /api/v2/feedback.
func (h *FeedbackHandlers) List(c *fiber.Ctx) error {
	filter := feedback.ListFilter{
		AgentSlug: strings.Clone(c.Query("agent")),
		Rating:    strings.Clone(c.Query("rating")),
	}
	scope := "feedback|agent=" + filter.AgentSlug + "|rating=" + filter.Rating
	page, err := wire.Page(c, scope, domain.PrefixMessage)
	if err != nil {
		return err
	}
	items, err := h.feedback.List(c.UserContext(), workspaceID(c), filter, page)
	if err != nil {
		return err
	}
	return c.JSON(wire.NewList(items, scope, toRatedAnswerDTO))
}
