package wire

import (
	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/workspace"
)

// Identity verification headers (PRODUCT.md, "Identity verification"),
// honoured on every call that can start or continue a session.
const (
	HeaderIdentity  = "X-Service-Identity"
	HeaderSignature = "X-Service-Signature"
)

// HeaderIdempotencyKey makes a request that stores something do so once:
// the webhook's events and the chat routes' turns.
const HeaderIdempotencyKey = "Idempotency-Key"

type principalKey struct{}

// SetPrincipal records the authenticated API caller on the request.
func SetPrincipal(c *fiber.Ctx, p workspace.Principal) { c.Locals(principalKey{}, p) }

// Principal returns the authenticated API caller. Routes behind the API-key
// middleware always have one; elsewhere ok is false.
func Principal(c *fiber.Ctx) (workspace.Principal, bool) {
	p, ok := c.Locals(principalKey{}).(workspace.Principal)
	return p, ok
}
