package webhook

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// The body of every delivery, documented in docs/api.md ("Helpdesk delivery
// and outbound events"): the Standard Webhooks envelope {type, timestamp,
// data}. It is built only from the delivery's stored snapshot and its
// creation time, with struct fields in a fixed order, so every attempt of a
// delivery sends the same bytes.
type envelope struct {
	Type string `json:"type"`
	// Timestamp is when the change happened (the delivery's creation), not
	// when this attempt was made: that is the webhook-timestamp header.
	Timestamp string `json:"timestamp"`
	Data      data   `json:"data"`
}

type data struct {
	Conversation conversation `json:"conversation"`
	Message      *message     `json:"message,omitempty"`
	Contact      *contact     `json:"contact,omitempty"`
	Transcript   []message    `json:"transcript,omitempty"`
}

type conversation struct {
	ID             string  `json:"id"`
	Agent          string  `json:"agent"`
	Channel        string  `json:"channel"`
	Status         string  `json:"status"`
	VerifiedUserID *string `json:"verifiedUserId"`
	ContactName    *string `json:"contactName"`
	ContactEmail   *string `json:"contactEmail"`
	AssigneeID     *string `json:"assigneeId"`
	CreatedAt      string  `json:"createdAt"`
}

type message struct {
	ID        string     `json:"id"`
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	Citations []citation `json:"citations"`
	// AuthorName is a HUMAN reply's author; Status the state a SYSTEM
	// notice records.
	AuthorName *string `json:"authorName,omitempty"`
	Status     *string `json:"status,omitempty"`
	CreatedAt  string  `json:"createdAt"`
}

type citation struct {
	DocumentName string  `json:"documentName"`
	SourceID     string  `json:"sourceId"`
	SourceType   string  `json:"sourceType"`
	URL          *string `json:"url"`
	Snippet      string  `json:"snippet"`
	Score        float64 `json:"score"`
}

type contact struct {
	Name  *string `json:"name"`
	Email *string `json:"email"`
	Note  *string `json:"note"`
}

// timeFormat is the API's: RFC 3339 in UTC with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toMessage(m domain.Message) message {
	out := message{
		ID: m.ID, Role: string(m.Role), Content: m.Content, Citations: make([]citation, 0, len(m.Citations)),
		AuthorName: optional(m.AuthorName), Status: optional(string(m.Status)), CreatedAt: formatTime(m.CreatedAt),
	}
	for _, c := range m.Citations {
		out.Citations = append(out.Citations, citation{
			DocumentName: c.DocumentName, SourceID: c.SourceID, SourceType: string(c.SourceType),
			URL: optional(c.URL), Snippet: c.Snippet, Score: c.Score,
		})
	}
	return out
}

// Body returns the JSON body of a delivery. It depends only on the stored
// delivery, so it is the same on every attempt.
func Body(d domain.Delivery) ([]byte, error) {
	c := d.Conversation
	id := c.ID
	if id == "" {
		id = d.ConversationID
	}
	env := envelope{
		Type:      d.Type,
		Timestamp: formatTime(d.CreatedAt),
		Data: data{Conversation: conversation{
			ID: id, Agent: c.AgentSlug, Channel: string(c.Channel), Status: string(c.Status),
			VerifiedUserID: optional(c.VerifiedUserID), ContactName: optional(c.ContactName),
			ContactEmail: optional(c.ContactEmail), AssigneeID: optional(c.AssigneeID), CreatedAt: formatTime(c.CreatedAt),
		}},
	}
	if d.Message != nil {
		m := toMessage(*d.Message)
		env.Data.Message = &m
	}
	if d.Contact != nil {
		env.Data.Contact = &contact{Name: optional(d.Contact.Name), Email: optional(d.Contact.Email), Note: optional(d.Contact.Note)}
	}
	if d.Transcript != nil {
		env.Data.Transcript = make([]message, 0, len(d.Transcript))
		for _, m := range d.Transcript {
			env.Data.Transcript = append(env.Data.Transcript, toMessage(m))
		}
	}
	b, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("webhook: encode delivery %s: %w", d.ID, err)
	}
	return b, nil
}
