package v1

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/handoff"
)

// handoffRequest is the body of POST /api/chat/{sessionId}/handoff: the
// optional handoff form, checked by the domain (lengths, email syntax).
type handoffRequest struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Note  string `json:"note"`
}

// handoffResponse is where the conversation stands after the request.
type handoffResponse struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
}

// RequestHandoff serves POST /api/chat/{sessionId}/handoff.
func (h *Handlers) RequestHandoff(c *fiber.Ctx) error {
	var body handoffRequest
	if err := h.decoder.Decode(c, &body, true); err != nil {
		return err
	}
	conv, err := h.handoff.RequestHandoff(c.UserContext(), handoff.Request{
		Session: sessionOf(c),
		Name:    body.Name, Email: body.Email, Note: body.Note,
	})
	if err != nil {
		return err
	}
	return c.JSON(handoffResponse{SessionID: conv.ID, Status: string(conv.Status)})
}

// pollResponse is what happened in the session after the client's last
// message: the messages (oldest first, SYSTEM notices included), whether
// more follow, and the conversation's state.
type pollResponse struct {
	SessionID string            `json:"sessionId"`
	Status    string            `json:"status"`
	Messages  []wire.MessageDTO `json:"messages"`
	HasMore   bool              `json:"hasMore"`
}

// Poll serves GET /api/chat/{sessionId}/poll.
func (h *Handlers) Poll(c *fiber.Ctx) error {
	limit, err := wire.QueryLimit(c)
	if err != nil {
		return err
	}
	res, err := h.handoff.Poll(c.UserContext(), conversation.PollRequest{
		Session: sessionOf(c),
		After:   strings.Clone(c.Query("after")),
		Limit:   limit,
	})
	if err != nil {
		return err
	}
	out := pollResponse{
		SessionID: res.Conversation.ID, Status: string(res.Conversation.Status),
		Messages: make([]wire.MessageDTO, 0, len(res.Messages)), HasMore: res.HasMore,
	}
	for _, m := range res.Messages {
		out.Messages = append(out.Messages, wire.Message(m))
	}
	return c.JSON(out)
}

// sessionOf is the session a keyless call names, with the identity headers
// it carries.
func sessionOf(c *fiber.Ctx) conversation.SessionRef {
	return conversation.SessionRef{
		ID:              strings.Clone(c.Params("sessionId")),
		IdentityHeader:  strings.Clone(c.Get(wire.HeaderIdentity)),
		SignatureHeader: strings.Clone(c.Get(wire.HeaderSignature)),
	}
}
