package redis

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// FuzzDecodeEvent feeds decodeEvent what a session channel or log entry may
// hold: Redis is shared, and pods of another release write to it during a
// rolling deploy. It never panics, and whatever it accepts is an event the
// bus can publish again, unchanged by a second trip (so a relayed or
// replayed event is the event that was published).
func FuzzDecodeEvent(f *testing.F) {
	created := time.Date(2026, 11, 25, 10, 0, 0, 123_000_000, time.UTC)
	for _, ev := range []domain.SessionEvent{
		{Type: domain.EventToken, SessionID: "ses_1", MessageID: "msg_1", Seq: 3, Content: "Héllo "},
		{Type: domain.EventDone, SessionID: "ses_1", MessageID: "msg_1", Seq: 4, Answer: &domain.Answer{
			Reply:      domain.Message{ID: "msg_1", Content: "Héllo", Citations: []domain.Citation{{DocumentName: "FAQ", SourceID: "src_1", SourceType: domain.SourceText, Snippet: "s", Score: 0.5}}},
			IsFallback: true, FallbackReason: domain.FallbackNoKnowledge, OfferHandoff: true,
		}},
		{Type: domain.EventDone, SessionID: "ses_1", MessageID: "msg_q", Seq: 2, Answer: &domain.Answer{}},
		{Type: domain.EventError, SessionID: "ses_1", MessageID: "msg_1", Seq: 5, ErrorCode: "UNAVAILABLE", ErrorMessage: "retry"},
		{Type: domain.EventMessage, SessionID: "ses_1", MessageID: "msg_h", Seq: 1, Message: &domain.Message{
			ID: "msg_h", Role: domain.RoleHuman, Content: "Ana here", AuthorName: "Ana", CreatedAt: created,
		}},
		{Type: domain.EventStatus, SessionID: "ses_1", MessageID: "msg_n", Seq: 1, Status: domain.StatusHuman},
	} {
		w, err := toWire(ev)
		if err != nil {
			f.Fatal(err)
		}
		payload, err := json.Marshal(w)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(payload, "")
		f.Add(payload, "1764064800000-0")
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`, `{"v":2,"type":"token","sessionId":"ses_1","content":"x"}`,
		`{"v":1,"type":"token","sessionId":"","content":"x"}`, `{"v":1,"type":"token","sessionId":"ses_1"}`,
		`{"v":1,"type":"done","sessionId":"ses_1"}`, `{"v":1,"type":"message","sessionId":"ses_1","message":{"createdAt":"yesterday"}}`,
		`{"v":1,"type":"nope","sessionId":"ses_1"}`, `{"v":1,"type":"status","sessionId":"ses_1","status":null}`,
		`{"v":1,"type":"token","sessionId":"ses_1","content":"x","seq":-1,"logId":"0-1"}`,
	} {
		f.Add([]byte(bad), "")
	}
	f.Fuzz(func(t *testing.T, payload []byte, logID string) {
		ev, err := decodeEvent(payload, logID)
		if err != nil {
			return
		}
		if ev.SessionID == "" || ev.Gap {
			t.Fatalf("decoded %+v from %q", ev, payload)
		}
		if logID != "" && ev.LogID != logID {
			t.Fatalf("log id %q, want the entry's %q", ev.LogID, logID)
		}
		once := reencode(t, ev.SessionEvent)
		again, err := decodeEvent(once, "")
		if err != nil {
			t.Fatalf("re-decoding %s: %v", once, err)
		}
		if twice := reencode(t, again.SessionEvent); string(twice) != string(once) {
			t.Fatalf("a second trip changed the event:\n%s\n%s", once, twice)
		}
	})
}

func reencode(t *testing.T, ev domain.SessionEvent) []byte {
	t.Helper()
	w, err := toWire(ev)
	if err != nil {
		t.Fatalf("a decoded event cannot be published again: %v (%+v)", err, ev)
	}
	out, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
