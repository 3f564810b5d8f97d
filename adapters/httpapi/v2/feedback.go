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
	feedback *feedback.Service
}

// NewFeedbackHandlers returns the feedback handlers.
func NewFeedbackHandlers(f *feedback.Service) *FeedbackHandlers {
	return &FeedbackHandlers{feedback: f}
}

// Register adds the feedback list to r (already authenticated).
func (h *FeedbackHandlers) Register(r fiber.Router) {
	r.Get("/feedback", h.list)
}

func (h *FeedbackHandlers) list(c *fiber.Ctx) error {
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
