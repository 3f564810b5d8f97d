package domain

import (
	"strings"
	"time"
)

// Role is who wrote a message.
type Role string

// Message roles.
const (
	RoleUser      Role = "USER"
	RoleAssistant Role = "ASSISTANT"
	RoleHuman     Role = "HUMAN"
	RoleSystem    Role = "SYSTEM"
	// RoleNote is an internal note: members and API keys write and read
	// it, and it never leaves the team (Internal).
	RoleNote Role = "NOTE"
)

// Internal reports whether a message of role r stays with the team: it is
// never published to the session's followers, polled, replayed, put in
// the answer engine's history, nor delivered to the helpdesk or the
// events URL. Every path that shows a conversation to its visitor or sends
// it out asks this, so a new path cannot forget one role.
func (r Role) Internal() bool { return r == RoleNote }

// Public returns msgs without the internal ones (Role.Internal), in order;
// msgs itself when there are none.
func Public(msgs []Message) []Message {
	for i, m := range msgs {
		if m.Role.Internal() {
			out := append(make([]Message, 0, len(msgs)-1), msgs[:i]...)
			for _, m := range msgs[i+1:] {
				if !m.Role.Internal() {
					out = append(out, m)
				}
			}
			return out
		}
	}
	return msgs
}

// MaxMessageLength is the default cap on a message's characters.
const MaxMessageLength = 8000

// Message is one turn of a conversation.
type Message struct {
	ID             string
	WorkspaceID    string
	ConversationID string
	Role           Role
	Content        string
	Citations      []Citation
	// InboundEventID links a USER message to the webhook event that created it,
	// which makes appending it idempotent.
	InboundEventID string
	TokensIn       int
	TokensOut      int
	// Model names the model that wrote an ASSISTANT reply (its tokens are
	// TokensIn and TokensOut); "" when no model was asked (a fallback).
	Model string
	// TokenEnds are, for a streamed ASSISTANT reply, the byte offsets in
	// Content where each token event ended, in order: token seq i carried
	// Content[TokenEnds[i-2]:TokenEnds[i-1]] (from 0 for the first). A stream
	// resumed after its Redis copy expired is replayed from them.
	TokenEnds []int
	// Status is, for a SYSTEM notice of a status change, the state the
	// conversation entered; its live event is a status event.
	Status ConversationStatus
	// AuthorName is a HUMAN reply's or a NOTE's author as the helpdesk,
	// the integration or the console named them.
	AuthorName string
	// AuthorID is the member (usr_...) who wrote a HUMAN reply or a NOTE
	// from the console; "" for API keys and the helpdesk, which are no
	// member.
	AuthorID string
	// Trace is how the answer's knowledge was retrieved (ASSISTANT messages
	// that retrieved); stored with the message, read only by the trace API.
	Trace *RetrievalTrace
	// FallbackReason and OfferHandoff are, for an ASSISTANT reply, how it
	// came about (domain.Answer's): a stored reply replays as it was sent.
	FallbackReason FallbackReason
	OfferHandoff   bool
	// Feedback is the visitor's rating of an ASSISTANT message; nil when none.
	Feedback *Feedback
	// ReplyID is, on a USER question the answer engine stored, the id of
	// the reply it writes for it. While that reply is not stored the
	// answer is in progress (AnswerInProgress); a retried request finds
	// its answer through it.
	ReplyID string
	// IdempotencyKey is, on a question asked with an Idempotency-Key, the
	// key scoped to its caller (the workspace's API, or one session), and
	// RequestHash identifies the request, so a retry is told apart from a
	// reused key.
	IdempotencyKey string
	RequestHash    string
	CreatedAt      time.Time
}

// AnswerInProgress is a reply a stored question awaits: the engine is
// generating it, or the process that was died. An answer outlives the
// engine's time limit only in the second case.
type AnswerInProgress struct {
	ReplyID        string
	WorkspaceID    string
	ConversationID string
	QuestionID     string
	StartedAt      time.Time
}

// Citation points at the knowledge an answer used.
type Citation struct {
	DocumentName string
	SourceID     string
	SourceType   SourceType
	URL          string
	Snippet      string
	Score        float64
}

// Preview shortens text for list views such as lastMessage.
func Preview(text string, maxRunes int) string {
	r := []rune(strings.TrimSpace(text))
	if len(r) <= maxRunes {
		return string(r)
	}
	return string(r[:maxRunes-1]) + "…"
}
