package sse

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/domain"
)

// Turn is a chat turn that passed every check and is ready to run
// (*chat.Pending).
type Turn interface {
	// Run generates and stores the answer, emitting its events to emit
	// when set. Generation problems become a fallback answer or an error
	// event; the error it returns means a message could not be stored.
	Run(ctx context.Context, emit chat.Emit) (domain.Answer, error)
}

// Answer runs a pending answer and streams its token, done and error events
// (POST /api/v2/chat), preceded, when withQuestion is set, by a message
// event carrying the stored USER message (POST /api/chat/{sessionId}/message,
// so the widget learns its question's id and time). The answer runs on its
// own goroutine under ctx (the server's, not the client's), so a client
// that leaves does not stop it: it is completed and stored.
func Answer(c *fiber.Ctx, ctx context.Context, pending Turn, withQuestion bool) error {
	stream := NewStream(1024)
	go func() {
		defer stream.Close()
		terminal := false
		_, err := pending.Run(ctx, func(ev domain.SessionEvent) {
			switch {
			case ev.Type == domain.EventToken || ev.Type == domain.EventDone || ev.Type == domain.EventError:
			case withQuestion && ev.Type == domain.EventMessage && ev.Message != nil && ev.Message.Role == domain.RoleUser:
			default:
				return // a POST stream carries its answer; the rest goes to live streams
			}
			terminal = terminal || ev.Type == domain.EventDone || ev.Type == domain.EventError
			stream.Send(Event{ID: ev.EventID(), Data: wire.EventData(ev)})
		})
		if err != nil && !terminal {
			_, body := wire.DescribeError(err)
			stream.Send(Event{Data: wire.EventData(domain.SessionEvent{Type: domain.EventError, ErrorCode: body.Error.Code, ErrorMessage: body.Error.Message})})
		}
	}()
	return Serve(c, stream)
}
