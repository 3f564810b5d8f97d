package v1_test

import (
	"context"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/httpapitest"
	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	v1 "github.com/conciergehq/concierge/adapters/httpapi/v1"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/relay"
)

// Scripted fakes of v1's use cases: each method records its arguments and
// returns what the test scripted under "Interface.Method".

type fakeSessions struct{ *httpapitest.Script }

var _ v1.Sessions = fakeSessions{}

func (f fakeSessions) StartSession(_ context.Context, ws *domain.Workspace, slug string, identity *domain.Identity) (domain.Conversation, error) {
	r := f.Call("Sessions.StartSession", ws.ID, slug, identity)
	return httpapitest.Value[domain.Conversation](r, 0), r.Err
}

type fakeChat struct{ *httpapitest.Script }

var _ v1.Chat = fakeChat{}

func (f fakeChat) Start(_ context.Context, req chat.Request) (sse.Turn, error) {
	r := f.Call("Chat.Start", req)
	if r.Err != nil {
		return nil, r.Err
	}
	return httpapitest.Value[*httpapitest.Turn](r, 0), nil
}

type fakeHandoffs struct{ *httpapitest.Script }

var _ v1.Handoffs = fakeHandoffs{}

func (f fakeHandoffs) RequestHandoff(_ context.Context, req handoff.Request) (domain.Conversation, error) {
	r := f.Call("Handoffs.RequestHandoff", req)
	return httpapitest.Value[domain.Conversation](r, 0), r.Err
}

func (f fakeHandoffs) Poll(_ context.Context, req conversation.PollRequest) (conversation.PollResult, error) {
	r := f.Call("Handoffs.Poll", req)
	return httpapitest.Value[conversation.PollResult](r, 0), r.Err
}

type fakeRelay struct{ *httpapitest.Script }

var _ sse.Opener = fakeRelay{}

func (f fakeRelay) Open(_ context.Context, req relay.Request) (sse.LiveStream, error) {
	r := f.Call("Relay.Open", req)
	if r.Err != nil {
		return nil, r.Err
	}
	return httpapitest.Value[*httpapitest.LiveStream](r, 0), nil
}

type fakeRatings struct{ *httpapitest.Script }

var _ v1.Ratings = fakeRatings{}

func (f fakeRatings) Rate(_ context.Context, req feedback.Request) (domain.Feedback, error) {
	r := f.Call("Ratings.Rate", req)
	return httpapitest.Value[domain.Feedback](r, 0), r.Err
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// newApp serves every v1 route, as routes.go lists them, on fakes scripted
// by s: /api/v1 as the principal httpapitest.Principal, /api/chat keyless.
func newApp(t testing.TB, s *httpapitest.Script) *httpapitest.App {
	t.Helper()
	app := httpapitest.New(t, nil)
	d := wire.NewDecoder()
	sessions := v1.NewHandlers(fakeSessions{s}, fakeChat{s}, fakeHandoffs{s}, d, fixedClock{now})
	events := v1.NewEventHandlers(sse.NewFollower(fakeRelay{s}))
	ratings := v1.NewFeedbackHandlers(fakeRatings{s}, d)

	keyed := app.Group("/api/v1", func(c *fiber.Ctx) error {
		wire.SetPrincipal(c, httpapitest.Principal())
		return c.Next()
	})
	keyed.Post("/sessions", sessions.CreateSession)
	session := app.Group("/api/chat")
	session.Post("/:sessionId/message", sessions.Message)
	session.Post("/:sessionId/handoff", sessions.RequestHandoff)
	session.Get("/:sessionId/poll", sessions.Poll)
	session.Get("/:sessionId/events", events.Follow)
	session.Post("/:sessionId/messages/:messageId/feedback", ratings.Rate)
	return app
}
