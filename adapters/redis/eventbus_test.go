package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

// logIDSuffix is how the channel's envelope ends: the event's log entry.
var logIDSuffix = regexp.MustCompile(`,"logId":"(\d+-\d+)"}$`)

// withoutLogID checks that a published envelope ends with its log entry's
// id and returns the envelope without it, as the log stores it.
func withoutLogID(t *testing.T, payload string) string {
	t.Helper()
	m := logIDSuffix.FindStringSubmatchIndex(payload)
	if m == nil {
		t.Fatalf("published envelope does not end with its logId: %s", payload)
	}
	return payload[:m[0]] + "}"
}

// receive reads the next message of sub, failing after five seconds.
func receive(t *testing.T, sub *goredis.PubSub) *goredis.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return msg
}

// Every event type of a chat turn and of a live session, read back by a raw
// subscriber as the relay will: the exact JSON, which is a contract.
func TestEventBusPublishesEveryEventType(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	bus := redisadapter.NewEventBus(connect(t, url))
	subscriber := connect(t, url)
	created := time.Date(2026, 11, 21, 11, 0, 0, 123_456_789, time.FixedZone("CET", 3600))
	reply := domain.Message{
		ID: "msg_r", WorkspaceID: "ws_secret", ConversationID: "ses_d", Role: domain.RoleAssistant,
		Content: "Refunds take 5 days.", TokensIn: 120, TokensOut: 7, CreatedAt: created,
		Citations: []domain.Citation{
			{DocumentName: "Refunds", SourceID: "src_1", SourceType: domain.SourceText, Snippet: "5 days", Score: 0.5},
			{DocumentName: "FAQ", SourceID: "src_2", SourceType: domain.SourceQA, URL: "https://example.com/faq", Snippet: "refunds", Score: 1.25},
		},
	}
	user := domain.Message{ID: "msg_u", ConversationID: "ses_d", Role: domain.RoleUser, Content: "refund?", CreatedAt: created}

	tests := []struct {
		name string
		ev   domain.SessionEvent
		want string
	}{
		{
			name: "token",
			ev:   domain.SessionEvent{Type: domain.EventToken, SessionID: "ses_t", MessageID: "msg_r", Seq: 3, Content: "Refunds "},
			want: `{"v":1,"type":"token","sessionId":"ses_t","messageId":"msg_r","seq":3,"content":"Refunds "}`,
		},
		{
			name: "token of whitespace and markup",
			ev:   domain.SessionEvent{Type: domain.EventToken, SessionID: "ses_t2", MessageID: "msg_r", Seq: 1, Content: "\n<b>\"x\"</b> "},
			want: `{"v":1,"type":"token","sessionId":"ses_t2","messageId":"msg_r","seq":1,"content":"\n\u003cb\u003e\"x\"\u003c/b\u003e "}`,
		},
		{
			name: "done with citations",
			ev: domain.SessionEvent{Type: domain.EventDone, SessionID: "ses_d", MessageID: "msg_r", Seq: 9, Answer: &domain.Answer{
				SessionID: "ses_d", UserMessage: user, Reply: reply, Usage: domain.Usage{PromptTokens: 120, CompletionTokens: 7},
			}},
			want: `{"v":1,"type":"done","sessionId":"ses_d","messageId":"msg_r","seq":9,"answer":{"sessionId":"ses_d","messageId":"msg_r","message":"Refunds take 5 days.","citations":[{"documentName":"Refunds","sourceId":"src_1","sourceType":"text","snippet":"5 days","score":0.5},{"documentName":"FAQ","sourceId":"src_2","sourceType":"qa","url":"https://example.com/faq","snippet":"refunds","score":1.25}],"isFallback":false,"fallbackReason":null,"offerHandoff":false}}`,
		},
		{
			name: "fallback done offering handoff",
			ev: domain.SessionEvent{Type: domain.EventDone, SessionID: "ses_f", MessageID: "msg_f", Seq: 4, Answer: &domain.Answer{
				SessionID: "ses_f", Reply: domain.Message{ID: "msg_f", ConversationID: "ses_f", Role: domain.RoleAssistant, Content: "Sorry, I don't know."},
				IsFallback: true, FallbackReason: domain.FallbackNoKnowledge, OfferHandoff: true,
			}},
			want: `{"v":1,"type":"done","sessionId":"ses_f","messageId":"msg_f","seq":4,"answer":{"sessionId":"ses_f","messageId":"msg_f","message":"Sorry, I don't know.","citations":[],"isFallback":true,"fallbackReason":"NO_RELEVANT_KNOWLEDGE","offerHandoff":true}}`,
		},
		{
			// A person owns the conversation: no reply, so no message id anywhere.
			name: "done without a reply",
			ev: domain.SessionEvent{Type: domain.EventDone, SessionID: "ses_h", Answer: &domain.Answer{
				SessionID: "ses_h", UserMessage: user, FallbackReason: domain.FallbackHumanActive,
			}},
			want: `{"v":1,"type":"done","sessionId":"ses_h","answer":{"sessionId":"ses_h","messageId":null,"message":"","citations":[],"isFallback":false,"fallbackReason":"HUMAN_ACTIVE","offerHandoff":false}}`,
		},
		{
			name: "error",
			ev: domain.SessionEvent{Type: domain.EventError, SessionID: "ses_e", MessageID: "msg_e", Seq: 12,
				ErrorCode: "UNAVAILABLE", ErrorMessage: "the answer could not be stored; retry later"},
			want: `{"v":1,"type":"error","sessionId":"ses_e","messageId":"msg_e","seq":12,"error":{"code":"UNAVAILABLE","message":"the answer could not be stored; retry later"}}`,
		},
		{
			name: "user message of a chat turn",
			ev:   domain.SessionEvent{Type: domain.EventMessage, SessionID: "ses_d", MessageID: "msg_u", Seq: 1, Message: &user},
			want: `{"v":1,"type":"message","sessionId":"ses_d","messageId":"msg_u","seq":1,"message":{"id":"msg_u","role":"USER","content":"refund?","citations":[],"createdAt":"2026-11-21T10:00:00.123Z"}}`,
		},
		{
			name: "human reply",
			ev: domain.SessionEvent{Type: domain.EventMessage, SessionID: "ses_m", Message: &domain.Message{
				ID: "msg_h", ConversationID: "ses_m", Role: domain.RoleHuman, Content: "Hi, Ana here.", CreatedAt: created,
			}},
			want: `{"v":1,"type":"message","sessionId":"ses_m","message":{"id":"msg_h","role":"HUMAN","content":"Hi, Ana here.","citations":[],"createdAt":"2026-11-21T10:00:00.123Z"}}`,
		},
		{
			name: "status",
			ev:   domain.SessionEvent{Type: domain.EventStatus, SessionID: "ses_s", Status: domain.StatusHandoffRequested},
			want: `{"v":1,"type":"status","sessionId":"ses_s","status":"HANDOFF_REQUESTED"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := subscribe(t, subscriber, tt.ev.SessionID)
			if err := bus.Publish(t.Context(), tt.ev); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			msg := receive(t, sub)
			if msg.Channel != redisadapter.ChannelFor(tt.ev.SessionID) {
				t.Errorf("channel = %q", msg.Channel)
			}
			if got := withoutLogID(t, msg.Payload); got != tt.want {
				t.Errorf("payload\n got %s\nwant %s", got, tt.want)
			}
			// Self-describing: the type's payload is there, others are not.
			var env map[string]json.RawMessage
			if err := json.Unmarshal([]byte(msg.Payload), &env); err != nil {
				t.Fatalf("payload is not a JSON object: %v", err)
			}
			payloadKey := map[string]string{
				domain.EventToken: "content", domain.EventDone: "answer", domain.EventError: "error",
				domain.EventMessage: "message", domain.EventStatus: "status",
			}
			for typ, key := range payloadKey {
				if _, ok := env[key]; ok != (typ == tt.ev.Type) {
					t.Errorf("%s event: has %q = %v", tt.ev.Type, key, ok)
				}
			}
			// Private bookkeeping never leaves the process.
			for _, secret := range []string{"ws_secret", `"workspaceId"`, `"tokensIn"`, `"tokensOut"`, `"usage"`, `"inboundEventId"`, `"userMessage"`} {
				if strings.Contains(msg.Payload, secret) {
					t.Errorf("payload leaks %q: %s", secret, msg.Payload)
				}
			}
		})
	}
}

// One answer's events arrive in publish order, numbered, and the tokens add
// up to done's message: what a relay on another pod needs to replay a stream.
func TestEventBusAnswerStreamInOrder(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			testAnswerStreamInOrder(t, batched)
		})
	}
}

func testAnswerStreamInOrder(t *testing.T, batched bool) {
	url := redistest.URL(t)
	bus := redisadapter.NewEventBus(connect(t, url))
	sub := subscribe(t, connect(t, url), "ses_stream")

	tokens := []string{"Three ", "to ", "five ", "days."}
	var events []domain.SessionEvent
	for i, tok := range tokens {
		events = append(events, domain.SessionEvent{Type: domain.EventToken, SessionID: "ses_stream", MessageID: "msg_a", Seq: i + 1, Content: tok})
	}
	events = append(events, domain.SessionEvent{Type: domain.EventDone, SessionID: "ses_stream", MessageID: "msg_a", Seq: len(tokens) + 1, Answer: &domain.Answer{
		SessionID: "ses_stream", Reply: domain.Message{ID: "msg_a", ConversationID: "ses_stream", Content: "Three to five days."},
	}})
	if batched {
		if err := bus.Publish(t.Context(), events...); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, ev := range events {
			if err := bus.Publish(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
	}

	type envelope struct {
		V         int    `json:"v"`
		Type      string `json:"type"`
		MessageID string `json:"messageId"`
		Seq       int    `json:"seq"`
		Content   string `json:"content"`
		Answer    struct {
			Message string `json:"message"`
		} `json:"answer"`
	}
	var streamed string
	for i := range len(tokens) + 1 {
		var env envelope
		if err := json.Unmarshal([]byte(receive(t, sub).Payload), &env); err != nil {
			t.Fatal(err)
		}
		if env.V != 1 || env.MessageID != "msg_a" || env.Seq != i+1 {
			t.Errorf("event %d: %+v, want v 1, messageId msg_a, seq %d", i, env, i+1)
		}
		switch {
		case i < len(tokens) && env.Type == domain.EventToken:
			streamed += env.Content
		case i == len(tokens) && env.Type == domain.EventDone:
			if env.Answer.Message != streamed {
				t.Errorf("done.message = %q, tokens = %q", env.Answer.Message, streamed)
			}
		default:
			t.Errorf("event %d has type %q", i, env.Type)
		}
	}
}

// Malformed events are refused before anything reaches the channel.
func TestEventBusRefusesMalformedEvents(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	bus := redisadapter.NewEventBus(connect(t, url))
	sub := subscribe(t, connect(t, url), "ses_x")

	for name, ev := range map[string]domain.SessionEvent{
		"unknown type":               {Type: "typing", SessionID: "ses_x"},
		"empty type":                 {SessionID: "ses_x", Content: "hi"},
		"done without answer":        {Type: domain.EventDone, SessionID: "ses_x", MessageID: "msg_1", Seq: 2},
		"message without message":    {Type: domain.EventMessage, SessionID: "ses_x"},
		"answer of another session":  {Type: domain.EventDone, SessionID: "ses_x", Answer: &domain.Answer{SessionID: "ses_other"}},
		"message of another session": {Type: domain.EventMessage, SessionID: "ses_x", Message: &domain.Message{ID: "msg_1", ConversationID: "ses_other"}},
	} {
		if err := bus.Publish(t.Context(), ev); err == nil {
			t.Errorf("%s: Publish succeeded", name)
		}
	}
	// A valid event published afterwards is the first thing the subscriber sees.
	if err := bus.Publish(t.Context(), domain.SessionEvent{Type: domain.EventStatus, SessionID: "ses_x", Status: domain.StatusAI}); err != nil {
		t.Fatal(err)
	}
	if got, want := withoutLogID(t, receive(t, sub).Payload), `{"v":1,"type":"status","sessionId":"ses_x","status":"AI"}`; got != want {
		t.Errorf("first payload = %s, want %s", got, want)
	}
}
