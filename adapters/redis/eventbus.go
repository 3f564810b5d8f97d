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
// domain.ErrUnavailable if Redis cannot be reached.
func (b *EventBus) Publish(ctx context.Context, ev ports.SessionEvent) error {
	if ev.SessionID == "" {
		return errors.New("event bus: event has no session id")
	}
	payload, err := json.Marshal(toWire(ev))
	if err != nil {
		return fmt.Errorf("event bus: encode %s event: %w", ev.Type, err)
	}
	if err := b.client.Publish(ctx, ChannelFor(ev.SessionID), payload).Err(); err != nil {
		return domain.Unavailable("redis publish", err)
	}
	return nil
}

// wireEvent is the JSON envelope on a session channel. It is private: only
// this package publishes and (later) decodes it.
type wireEvent struct {
	V         int          `json:"v"`
	Type      string       `json:"type"`
	SessionID string       `json:"sessionId"`
	Message   *wireMessage `json:"message,omitempty"`
	Status    string       `json:"status,omitempty"`
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

func toWire(ev ports.SessionEvent) wireEvent {
	w := wireEvent{
		V:         wireVersion,
		Type:      ev.Type,
		SessionID: ev.SessionID,
		Status:    string(ev.Status),
	}
	if m := ev.Message; m != nil {
		// Always an array, never null, as in the API's message object.
		citations := make([]wireCitation, 0, len(m.Citations))
		for _, c := range m.Citations {
			citations = append(citations, wireCitation{
				DocumentName: c.DocumentName,
				SourceID:     c.SourceID,
				SourceType:   string(c.SourceType),
				URL:          c.URL,
				Snippet:      c.Snippet,
				Score:        c.Score,
			})
		}
		// The API's message object and nothing more: workspace id, token counts
		// and the inbound event id are bookkeeping end users must not see, and
		// the conversation is the envelope's sessionId.
		w.Message = &wireMessage{
			ID:        m.ID,
			Role:      string(m.Role),
			Content:   m.Content,
			Citations: citations,
			CreatedAt: m.CreatedAt.UTC().Format(timeLayout),
		}
	}
	return w
}
