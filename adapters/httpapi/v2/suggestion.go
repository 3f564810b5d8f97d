package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
)

// SuggestionHandlers serves drafted replies to integrations: an inbox of
// the integrator's own can offer what the console's "Suggest a reply" does.
type SuggestionHandlers struct {
	suggestions Suggestions
	decoder     *wire.Decoder
}

// NewSuggestionHandlers returns the suggestion handlers.
func NewSuggestionHandlers(svc Suggestions, decoder *wire.Decoder) *SuggestionHandlers {
	return &SuggestionHandlers{suggestions: svc, decoder: decoder}
}

// suggestionRequest is the body of POST
// /api/v2/conversations/{id}/suggested-reply: {} or none. The draft
// answers the visitor's latest message; there is nothing to choose.
type suggestionRequest struct{}

// Suggest serves POST /api/v2/conversations/{id}/suggested-reply. It
// stores, publishes and sends nothing.
func (h *SuggestionHandlers) Suggest(c *fiber.Ctx) error {
	var body suggestionRequest
	if err := h.decoder.Decode(c, &body, true); err != nil {
		return err
	}
	p, _ := wire.Principal(c)
	s, err := h.suggestions.Suggest(c.UserContext(), &p.Workspace, strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.JSON(wire.Suggestion(s))
}
