package wire

import (
	"github.com/conciergehq/concierge/core/domain"
)

// AnswerDTO is the JSON answer of POST /api/v2/chat and the done event.
type AnswerDTO struct {
	Type           string        `json:"type,omitempty"`
	SessionID      string        `json:"sessionId"`
	MessageID      *string       `json:"messageId"`
	Message        string        `json:"message"`
	Citations      []CitationDTO `json:"citations"`
	IsFallback     bool          `json:"isFallback"`
	FallbackReason *string       `json:"fallbackReason"`
	OfferHandoff   bool          `json:"offerHandoff"`
}

// Answer maps a domain answer.
func Answer(a domain.Answer) AnswerDTO {
	return AnswerDTO{
		SessionID:      a.SessionID,
		MessageID:      OptionalString(a.Reply.ID),
		Message:        a.Reply.Content,
		Citations:      Citations(a.Reply.Citations),
		IsFallback:     a.IsFallback,
		FallbackReason: OptionalString(string(a.FallbackReason)),
		OfferHandoff:   a.OfferHandoff,
	}
}

type tokenDTO struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

type errorEventDTO struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

type messageEventDTO struct {
	Type    string     `json:"type"`
	Message MessageDTO `json:"message"`
}

type statusEventDTO struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

// EventData is the JSON of a session event on a stream, exactly as
// PRODUCT.md lists the types.
func EventData(ev domain.SessionEvent) any {
	switch ev.Type {
	case domain.EventToken:
		return tokenDTO{Type: ev.Type, Content: ev.Content}
	case domain.EventDone:
		d := Answer(*ev.Answer)
		d.Type = ev.Type
		return d
	case domain.EventMessage:
		return messageEventDTO{Type: ev.Type, Message: Message(*ev.Message)}
	case domain.EventStatus:
		return statusEventDTO{Type: ev.Type, Status: string(ev.Status)}
	default:
		return errorEventDTO{Type: domain.EventError, Code: ev.ErrorCode, Message: ev.ErrorMessage}
	}
}
