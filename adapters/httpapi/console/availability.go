package console

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

// SetAvailability serves POST /console/w/{workspaceID}/availability: the
// signed-in member sets themselves available or away (form available=
// true|false), whatever their role, and is sent back to the page the
// toggle was on (form next, a console path of this workspace; the
// workspace's overview otherwise).
func (h *Handlers) SetAvailability(c *fiber.Ctx) error {
	if h.availability == nil {
		return domain.Unavailable("availability", errors.New("console built without Options.Availability"))
	}
	var available bool
	switch c.FormValue("available") {
	case "true":
		available = true
	case "false":
	default:
		return domain.InvalidField("available", "must be true or false")
	}
	m := member(c)
	if _, err := h.availability.SetAvailable(c.UserContext(), m, available); err != nil {
		return err
	}
	return redirect(c, backTo(formValue(c, "next"), m.WorkspaceID))
}

// backTo is where a form of the workspace layout returns: next when it is
// a console page of the same workspace (safeNext refuses anything that
// could leave the site), else the workspace's overview.
func backTo(next, workspaceID string) string {
	home := Prefix + "/w/" + workspaceID + "/"
	next = safeNext(next)
	if next+"/" == home || strings.HasPrefix(next, home) || strings.HasPrefix(next, strings.TrimSuffix(home, "/")+"?") {
		return next
	}
	return home
}
