package ports

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// Mailer sends email: invitations and password resets. When no mail server
// is configured the console shows links to the person who made them instead,
// so nothing depends on email arriving.
type Mailer interface {
	// Send hands one message to the mail server. Returns an error wrapping
	// domain.ErrUnavailable when the server cannot be reached or refuses the
	// message, and domain.ErrInvalidInput when the message has no valid
	// recipient.
	Send(ctx context.Context, m domain.Email) error
}
