package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

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
// session's live stream relays events produced on any other pod, and appends
// each to the session's short-lived log (a Redis stream, LogKeyFor), from
// which a client that lost its stream is replayed while the answer is still
// being generated.
type EventBus struct {
	client    goredis.UniversalClient
	retention LogRetention
}

var _ ports.EventBus = (*EventBus)(nil)

// LogRetention bounds each session's log: its length (approximately: Redis
// trims whole blocks of entries) and how long it outlives its last event.
// PostgreSQL keeps the durable copy; the log only has to cover answers
// being generated and clients reconnecting.
type LogRetention struct {
	MaxLen int
	TTL    time.Duration
}

// DefaultLogRetention keeps about 2,000 events of a session for 10 minutes
// after its last one: an answer is at most a few thousand tokens, and a
// client that was away longer than that is replayed from PostgreSQL.
var DefaultLogRetention = LogRetention{MaxLen: 2000, TTL: 10 * time.Minute}

// NewEventBus returns a bus publishing through client with the default
// retention.
func NewEventBus(client goredis.UniversalClient) *EventBus {
	return &EventBus{client: client, retention: DefaultLogRetention}
}

// WithRetention returns a copy of b whose logs are kept as r says; zero
// fields keep the default.
func (b *EventBus) WithRetention(r LogRetention) *EventBus {
	out := *b
	if r.MaxLen > 0 {
		out.retention.MaxLen = r.MaxLen
	}
	if r.TTL > 0 {
		out.retention.TTL = r.TTL
	}
	return &out
}

// logKeyPrefix starts every session's log key.
const logKeyPrefix = "concierge:events:"

// LogKeyFor returns the key of a session's log (a Redis stream). Unlike the
// channel, it lives in the client's database.
func LogKeyFor(sessionID string) string {
	return logKeyPrefix + sessionID
}

// publishScript appends each event to the session's log and publishes it,
// in order and atomically, so a follower that subscribed before reading the
// log finds every event in one or the other (or both: it dedupes). The
// published envelope gains the entry's id as its last field, logId, which
// tells a follower where in the log it is.
//
// KEYS[1] the log; ARGV[1] the channel, ARGV[2] the log's max length,
// ARGV[3] its expiry in ms, then per event its SSE id and its envelope.
var publishScript = goredis.NewScript(`
local id
for i = 4, #ARGV, 2 do
	id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'i', ARGV[i], 'e', ARGV[i + 1])
	redis.call('PUBLISH', ARGV[1], string.sub(ARGV[i + 1], 1, -2) .. ',"logId":"' .. id .. '"}')
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return id
`)

// Publish appends each event to its session's log and sends it as a JSON
// envelope to ChannelFor(ev.SessionID), in order: one round trip for a batch
// of one session's events (an answer's queued tokens). Pub/sub is fire and
// forget: an event nobody listens to is dropped, which is fine because the
// log and PostgreSQL keep copies. Returns an error wrapping
// domain.ErrUnavailable if Redis cannot be reached (some of the events may
// have been published), and a plain error, without publishing, for an event
// that is not one of the ports.Event* types, lacks its payload (a done event
// without Answer, a message event without Message) or whose payload belongs
// to another session.
func (b *EventBus) Publish(ctx context.Context, events ...domain.SessionEvent) error {
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
	ttl := strconv.FormatInt(b.retention.TTL.Milliseconds(), 10)
	maxLen := strconv.Itoa(b.retention.MaxLen)
	// One script run per run of consecutive events of one session; a batch
	// almost always is one answer's, so one run.
	for start := 0; start < len(events); {
		session := events[start].SessionID
		end := start
		args := []any{ChannelFor(session), maxLen, ttl}
		for ; end < len(events) && events[end].SessionID == session; end++ {
			args = append(args, events[end].EventID(), payloads[end])
		}
		if err := publishScript.Run(ctx, b.client, []string{LogKeyFor(session)}, args...).Err(); err != nil {
			return domain.Unavailable("redis publish", err)
		}
		start = end
	}
	return nil
}

// wireEvent is the JSON envelope on a session channel and in a session's
// log. It is private: only this package publishes and decodes it.
//
// Every envelope has v, type and sessionId; messageId and seq when the event
// has them (the SSE id "<messageId>:<seq>"). Then exactly the type's own
// payload, with all its keys:
//
//	token    content
//	done     answer {sessionId, messageId, message, citations, isFallback, fallbackReason, offerHandoff}
//	error    error {code, message}
//	message  message {id, role, content, citations, createdAt, authorName?}
//	status   status
//
// On the channel (not in the log, where the entry's own id says it), the
// envelope ends with logId, the event's entry in the session's log.
//
// Citations are always arrays; answer.messageId is null when the answer has
// no reply message (a person owns the conversation) and answer.fallbackReason
// null when there is none, as in the API's answer object; authorName only
// for a HUMAN reply that has one. Fields are only ever added within a
// version; wireVersion changes when one changes meaning or goes away.
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
	LogID     string       `json:"logId,omitempty"`
}

type wireMessage struct {
	ID         string         `json:"id"`
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Citations  []wireCitation `json:"citations"`
	CreatedAt  string         `json:"createdAt"`
	AuthorName string         `json:"authorName,omitempty"`
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

func toWire(ev domain.SessionEvent) (wireEvent, error) {
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
	case domain.EventToken:
		content := ev.Content
		w.Content = &content
	case domain.EventDone:
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
	case domain.EventError:
		w.Error = &wireError{Code: ev.ErrorCode, Message: ev.ErrorMessage}
	case domain.EventMessage:
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
			ID:         m.ID,
			Role:       string(m.Role),
			Content:    m.Content,
			Citations:  toWireCitations(m.Citations),
			CreatedAt:  m.CreatedAt.UTC().Format(timeLayout),
			AuthorName: m.AuthorName,
		}
	case domain.EventStatus:
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

// fromWire is toWire's inverse, for the events a follower relays: what the
// envelope carries, in domain types (a done's reply is the ASSISTANT message
// of the session with the answer's id, content and citations).
func fromWire(w *wireEvent) (domain.SessionEvent, error) {
	if w.V != wireVersion {
		return domain.SessionEvent{}, fmt.Errorf("event bus: envelope version %d, want %d", w.V, wireVersion)
	}
	if w.SessionID == "" {
		return domain.SessionEvent{}, errors.New("event bus: envelope without a session id")
	}
	ev := domain.SessionEvent{Type: w.Type, SessionID: w.SessionID, MessageID: w.MessageID, Seq: w.Seq}
	switch w.Type {
	case domain.EventToken:
		if w.Content == nil {
			return ev, errors.New("event bus: token without content")
		}
		ev.Content = *w.Content
	case domain.EventDone:
		a := w.Answer
		if a == nil {
			return ev, errors.New("event bus: done without an answer")
		}
		answer := &domain.Answer{SessionID: w.SessionID, IsFallback: a.IsFallback, OfferHandoff: a.OfferHandoff}
		if a.FallbackReason != nil {
			answer.FallbackReason = domain.FallbackReason(*a.FallbackReason)
		}
		if a.MessageID != nil {
			answer.Reply = domain.Message{
				ID: *a.MessageID, ConversationID: w.SessionID, Role: domain.RoleAssistant,
				Content: a.Message, Citations: fromWireCitations(a.Citations),
			}
		}
		ev.Answer = answer
	case domain.EventError:
		if w.Error == nil {
			return ev, errors.New("event bus: error event without its error")
		}
		ev.ErrorCode, ev.ErrorMessage = w.Error.Code, w.Error.Message
	case domain.EventMessage:
		m := w.Message
		if m == nil {
			return ev, errors.New("event bus: message event without its message")
		}
		created, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
		if err != nil {
			return ev, fmt.Errorf("event bus: message createdAt: %w", err)
		}
		ev.Message = &domain.Message{
			ID: m.ID, ConversationID: w.SessionID, Role: domain.Role(m.Role), Content: m.Content,
			Citations: fromWireCitations(m.Citations), AuthorName: m.AuthorName, CreatedAt: created,
		}
	case domain.EventStatus:
		if w.Status == nil {
			return ev, errors.New("event bus: status event without its status")
		}
		ev.Status = domain.ConversationStatus(*w.Status)
	default:
		return ev, fmt.Errorf("event bus: unknown event type %q", w.Type)
	}
	return ev, nil
}

func fromWireCitations(cs []wireCitation) []domain.Citation {
	if len(cs) == 0 {
		return nil
	}
	out := make([]domain.Citation, len(cs))
	for i, c := range cs {
		out[i] = domain.Citation{
			DocumentName: c.DocumentName, SourceID: c.SourceID, SourceType: domain.SourceType(c.SourceType),
			URL: c.URL, Snippet: c.Snippet, Score: c.Score,
		}
	}
	return out
}

// decodeEvent decodes one envelope into the event followers share. logID
// is the entry's id when the envelope came from the log; the channel's
// envelopes carry their own.
func decodeEvent(payload []byte, logID string) (*domain.LiveEvent, error) {
	var w wireEvent
	if err := json.Unmarshal(payload, &w); err != nil {
		return nil, fmt.Errorf("event bus: decode envelope: %w", err)
	}
	ev, err := fromWire(&w)
	if err != nil {
		return nil, err
	}
	if logID == "" {
		logID = w.LogID
	}
	return &domain.LiveEvent{SessionEvent: ev, LogID: logID}, nil
}
