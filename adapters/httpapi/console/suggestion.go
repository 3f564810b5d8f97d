package console

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
)

// JSONErrors makes the ErrorHandler answer the rest of the request's
// errors in the API's JSON body instead of a page: for the routes
// console.js calls with fetch, which read the code, not HTML.
func JSONErrors(c *fiber.Ctx) error {
	wire.SetErrorPage(c, nil)
	return c.Next()
}

// Suggestion serves POST /console/w/{workspaceID}/inbox/{conversationID}/suggestion:
// the thread's "Suggest a reply" button (console.js, with the CSRF token in
// its header). It answers the draft as JSON
// {"draft","citations":[{"title","url"?,"sourceId"}],"fallback"} and
// never stores or sends anything: the member edits the draft in the
// composer and sends it as their own reply.
func (h *Handlers) Suggestion(c *fiber.Ctx) error {
	if h.suggestions == nil {
		return domain.Unavailable("suggestions", errors.New("console built without Options.Suggestions"))
	}
	ws, err := h.workspaces.GetWorkspace(c.UserContext(), member(c).WorkspaceID)
	if err != nil {
		return err
	}
	s, err := h.suggestions.Suggest(c.UserContext(), &ws, strings.Clone(c.Params("conversationID")))
	if err != nil {
		return err
	}
	return c.JSON(wire.Suggestion(s))
}
