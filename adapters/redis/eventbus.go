package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// sessionChannelPrefix starts every session's pub/sub channel.
const sessionChannelPrefix = "concierge:session:"

// wireVersion is bumped when the envelope changes incompatibly, so pods of
// two releases sharing a channel during a rolling deploy can tell the formats apart.
const wireVersion = 1

// timeLayout is the API's timestamp format: RFC 3339, UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// ChannelFor returns the Redis pub/sub channel of a session. Publishers and
// subscribers must agree on it, so it is the one place that builds the name.
func ChannelFor(sessionID string) string {
	return sessionChannelPrefix + sessionID
}

// EventBus publishes session events on Redis pub/sub, so the pod serving a
// session's live stream relays events produced on any other pod.
type EventBus struct {
	client goredis.UniversalClient
}

var _ ports.EventBus = (*EventBus)(nil)

// NewEventBus returns a bus publishing through client.
func NewEventBus(client goredis.UniversalClient) *EventBus {
	return &EventBus{client: client}
}

// Publish sends ev as a JSON envelope to ChannelFor(ev.SessionID). Pub/sub is
// fire and forget: an event nobody listens to is dropped, which is fine because
// Postgres keeps the durable copy. Returns an error wrapping
// domain.ErrUnavailable if Redis cannot be reached, and a plain error, without
// publishing, for an event that is not one of the ports.Event* types, lacks
// its payload (a done event without Answer, a message event without Message)
// or whose payload belongs to another session.
func (b *EventBus) Publish(ctx context.Context, events ...ports.SessionEvent) error {
	payloads := make([][]byte, len(events))
	for i, ev := range events {
		w, err := toWire(ev)
		if err != nil {
			return err
		}
		if payloads[i], err = json.Marshal(w); err != nil {
			return fmt.Errorf("event bus: encode %s event: %w", ev.Type, err)
		}
	}
	switch len(events) {
	case 0:
		return nil
	case 1:
		if err := b.client.Publish(ctx, ChannelFor(events[0].SessionID), payloads[0]).Err(); err != nil {
			return domain.Unavailable("redis publish", err)
		}
		return nil
	}
	// One round trip for a whole batch (an answer's queued tokens); a
	// pipeline keeps their order.
	_, err := b.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, ev := range events {
			p.Publish(ctx, ChannelFor(ev.SessionID), payloads[i])
		}
		return nil
	})
	if err != nil {
		return domain.Unavailable("redis publish", err)
	}
	return nil
}

// wireEvent is the JSON envelope on a session channel. It is private: only
// this package publishes and (later) decodes it.
//
// Every envelope has v, type and sessionId; messageId and seq when the event
// has them (the SSE id "<messageId>:<seq>"; absent for status changes and
// inbound messages). Then exactly the type's own payload, with all its keys:
//
//	token    content
//	done     answer {sessionId, messageId, message, citations, isFallback, fallbackReason, offerHandoff}
//	error    error {code, message}
//	message  message {id, role, content, citations, createdAt}
//	status   status
//
// Citations are always arrays; answer.messageId is null when the answer has
// no reply message (a person owns the conversation) and answer.fallbackReason
// null when there is none, as in the API's answer object. Fields are only
// ever added within a version; wireVersion changes when one changes meaning
// or goes away.
type wireEvent struct {
	V         int          `json:"v"`
	Type      string       `json:"type"`
	SessionID string       `json:"sessionId"`
	MessageID string       `json:"messageId,omitempty"`
	Seq       int          `json:"seq,omitempty"`
	Content   *string      `json:"content,omitempty"`
	Message   *wireMessage `json:"message,omitempty"`
	Answer    *wireAnswer  `json:"answer,omitempty"`
	Status    *string      `json:"status,omitempty"`
	Error     *wireError   `json:"error,omitempty"`
}

type wireMessage struct {
	ID        string         `json:"id"`
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	Citations []wireCitation `json:"citations"`
	CreatedAt string         `json:"createdAt"`
}

type wireCitation struct {
	DocumentName string  `json:"documentName"`
	SourceID     string  `json:"sourceId"`
	SourceType   string  `json:"sourceType"`
	URL          string  `json:"url,omitempty"`
	Snippet      string  `json:"snippet"`
	Score        float64 `json:"score"`
}

// wireAnswer is the finished answer, the fields of the API's done event.
type wireAnswer struct {
	SessionID      string         `json:"sessionId"`
	MessageID      *string        `json:"messageId"`
	Message        string         `json:"message"`
	Citations      []wireCitation `json:"citations"`
	IsFallback     bool           `json:"isFallback"`
	FallbackReason *string        `json:"fallbackReason"`
	OfferHandoff   bool           `json:"offerHandoff"`
}

type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func toWire(ev ports.SessionEvent) (wireEvent, error) {
	if ev.SessionID == "" {
		return wireEvent{}, errors.New("event bus: event has no session id")
	}
	w := wireEvent{
		V:         wireVersion,
		Type:      ev.Type,
		SessionID: ev.SessionID,
		MessageID: ev.MessageID,
		Seq:       ev.Seq,
	}
	switch ev.Type {
	case ports.EventToken:
		content := ev.Content
		w.Content = &content
	case ports.EventDone:
		a := ev.Answer
		if a == nil {
			return wireEvent{}, errors.New("event bus: done event has no answer")
		}
		if a.SessionID != "" && a.SessionID != ev.SessionID {
			return wireEvent{}, fmt.Errorf("event bus: answer of session %s published to session %s", a.SessionID, ev.SessionID)
		}
		// The API's answer object: token counts and the user's message are
		// bookkeeping the relay has no use for.
		w.Answer = &wireAnswer{
			SessionID:      ev.SessionID,
			MessageID:      optional(a.Reply.ID),
			Message:        a.Reply.Content,
			Citations:      toWireCitations(a.Reply.Citations),
			IsFallback:     a.IsFallback,
			FallbackReason: optional(string(a.FallbackReason)),
			OfferHandoff:   a.OfferHandoff,
		}
	case ports.EventError:
		w.Error = &wireError{Code: ev.ErrorCode, Message: ev.ErrorMessage}
	case ports.EventMessage:
		m := ev.Message
		if m == nil {
			return wireEvent{}, errors.New("event bus: message event has no message")
		}
		if m.ConversationID != "" && m.ConversationID != ev.SessionID {
			return wireEvent{}, fmt.Errorf("event bus: message of session %s published to session %s", m.ConversationID, ev.SessionID)
		}
		// The API's message object and nothing more: workspace id, token counts
		// and the inbound event id are bookkeeping end users must not see, and
		// the conversation is the envelope's sessionId.
		w.Message = &wireMessage{
			ID:        m.ID,
			Role:      string(m.Role),
			Content:   m.Content,
			Citations: toWireCitations(m.Citations),
			CreatedAt: m.CreatedAt.UTC().Format(timeLayout),
		}
	case ports.EventStatus:
		status := string(ev.Status)
		w.Status = &status
	default:
		return wireEvent{}, fmt.Errorf("event bus: unknown event type %q", ev.Type)
	}
	return w, nil
}

// toWireCitations is always an array, never null, as in the API.
func toWireCitations(cs []domain.Citation) []wireCitation {
	out := make([]wireCitation, 0, len(cs))
	for _, c := range cs {
		out = append(out, wireCitation{
			DocumentName: c.DocumentName,
			SourceID:     c.SourceID,
			SourceType:   string(c.SourceType),
			URL:          c.URL,
			Snippet:      c.Snippet,
			Score:        c.Score,
		})
	}
	return out
}

// optional is nil for "", so JSON shows null.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
