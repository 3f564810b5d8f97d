package console

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/conciergehq/concierge/core/domain"
)

// QueuesPrefix is where the queue monitor is mounted.
const QueuesPrefix = Prefix + "/queues"

// QueueMonitor is the deployment's queue UI (adapters/queuemonitor): a
// read-only net/http handler and the Content-Security-Policy its page
// needs.
type QueueMonitor interface {
	http.Handler
	CSP() string
}

// Queues serves the queue monitor to the owners of the operator's
// workspace only. The queues are the deployment's, shared by every
// workspace: an owner of any other workspace, and every admin and agent,
// gets the console's not-found page, as for a page that does not exist;
// without a monitor or an operator workspace configured, everyone does.
// The monitor's page runs inline scripts, allowed by their hashes in its
// own policy, which replaces the console's here only.
func (h *Handlers) Queues() fiber.Handler {
	serve := func(*fiber.Ctx) error { return domain.NotFound("page") }
	if h.queues != nil {
		serve = adaptor.HTTPHandler(h.queues)
	}
	return func(c *fiber.Ctx) error {
		if h.queues == nil || h.operatorWorkspace == "" {
			return domain.NotFound("page")
		}
		m, err := h.accounts.Member(c.UserContext(), principal(c).User.ID, h.operatorWorkspace)
		if err != nil || m.Role != domain.MemberOwner {
			return domain.NotFound("page")
		}
		c.Set(fiber.HeaderContentSecurityPolicy, h.queues.CSP())
		return serve(c)
	}
}
