package redis_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

// sessionEvents is every kind of event a live stream carries, as a
// follower decodes them: domain types holding only what the wire carries.
func sessionEvents(session string) []domain.SessionEvent {
	created := time.Date(2026, 11, 21, 10, 0, 0, 123_000_000, time.UTC)
	cites := []domain.Citation{{DocumentName: "Refunds", SourceID: "src_1", SourceType: domain.SourceText, URL: "https://example.com/r", Snippet: "5 days", Score: 0.5}}
	user := domain.Message{ID: "msg_u", ConversationID: session, Role: domain.RoleUser, Content: "refund?", CreatedAt: created}
	human := domain.Message{ID: "msg_h", ConversationID: session, Role: domain.RoleHuman, Content: "Ana here", AuthorName: "Ana", CreatedAt: created}
	return []domain.SessionEvent{
		{Type: domain.EventMessage, SessionID: session, MessageID: "msg_u", Seq: 1, Message: &user},
		{Type: domain.EventToken, SessionID: session, MessageID: "msg_r", Seq: 1, Content: "Five "},
		{Type: domain.EventToken, SessionID: session, MessageID: "msg_r", Seq: 2, Content: "days."},
		{Type: domain.EventDone, SessionID: session, MessageID: "msg_r", Seq: 3, Answer: &domain.Answer{
			SessionID: session, IsFallback: true, FallbackReason: domain.FallbackNoKnowledge, OfferHandoff: true,
			Reply: domain.Message{ID: "msg_r", ConversationID: session, Role: domain.RoleAssistant, Content: "Five days.", Citations: cites},
		}},
		{Type: domain.EventStatus, SessionID: session, MessageID: "msg_n", Seq: 1, Status: domain.StatusHuman},
		{Type: domain.EventMessage, SessionID: session, MessageID: "msg_h", Seq: 1, Message: &human},
		{Type: domain.EventError, SessionID: session, MessageID: "msg_e", Seq: 4, ErrorCode: "UNAVAILABLE", ErrorMessage: "retry later"},
	}
}

// The log gives back exactly what was published, in order, each event with
// its entry id; Since and After find positions and say when they cannot.
func TestEventLogReadsWhatWasPublished(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	bus := redisadapter.NewEventBus(client)
	eventLog := redisadapter.NewEventLog(client)
	published := sessionEvents("ses_log")
	if tail, err := eventLog.Tail(t.Context(), "ses_log"); err != nil || tail != "" {
		t.Fatalf("Tail of an empty log = %q, %v", tail, err)
	}
	// Two publications: a single event and a batch.
	if err := bus.Publish(t.Context(), published[0]); err != nil {
		t.Fatal(err)
	}
	if err := bus.Publish(t.Context(), published[1:]...); err != nil {
		t.Fatal(err)
	}

	all, found, err := eventLog.Since(t.Context(), "ses_log", "")
	if err != nil || !found {
		t.Fatalf("Since(\"\") = found %v, %v", found, err)
	}
	if len(all) != len(published) {
		t.Fatalf("log has %d events, want %d", len(all), len(published))
	}
	for i, ev := range all {
		if !reflect.DeepEqual(ev.SessionEvent, published[i]) {
			t.Errorf("event %d\n got %+v\nwant %+v", i, ev.SessionEvent, published[i])
		}
		if ev.LogID == "" || (i > 0 && ev.LogID == all[i-1].LogID) {
			t.Errorf("event %d has log id %q", i, ev.LogID)
		}
	}
	if tail, err := eventLog.Tail(t.Context(), "ses_log"); err != nil || tail != all[len(all)-1].LogID {
		t.Errorf("Tail = %q, %v; want %q", tail, err, all[len(all)-1].LogID)
	}

	// Newer orders the log's own ids, and compares ids as numbers.
	for i := 1; i < len(all); i++ {
		if !eventLog.Newer(all[i].LogID, all[i-1].LogID) || eventLog.Newer(all[i-1].LogID, all[i].LogID) || eventLog.Newer(all[i].LogID, all[i].LogID) {
			t.Errorf("Newer does not order %s after %s", all[i].LogID, all[i-1].LogID)
		}
	}
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"10-0", "9-5", true}, {"9-5", "10-0", false}, {"7-10", "7-9", true}, {"7-9", "7-10", false},
		{"1-0", "", true}, {"x", "7-0", true}, {"7-0", "x", true},
	} {
		if got := eventLog.Newer(tt.a, tt.b); got != tt.want {
			t.Errorf("Newer(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}

	// after reads After as the table reads Since: found is whether it
	// returned an entry id, which must be the event's own.
	after := func(session, eventID string) func() ([]*domain.LiveEvent, bool, error) {
		return func() ([]*domain.LiveEvent, bool, error) {
			events, at, err := eventLog.After(t.Context(), session, eventID)
			if i := slices.IndexFunc(all, func(ev *domain.LiveEvent) bool { return ev.LogID == at }); at != "" && (i < 0 || all[i].EventID() != eventID) {
				t.Errorf("After(%s) says the event is entry %s", eventID, at)
			}
			return events, at != "", err
		}
	}
	tests := []struct {
		name      string
		read      func() ([]*domain.LiveEvent, bool, error)
		wantFound bool
		wantFrom  int // index of the first event returned
	}{
		{"since the third", func() ([]*domain.LiveEvent, bool, error) { return eventLog.Since(t.Context(), "ses_log", all[2].LogID) }, true, 3},
		{"since the last", func() ([]*domain.LiveEvent, bool, error) {
			return eventLog.Since(t.Context(), "ses_log", all[len(all)-1].LogID)
		}, true, len(all)},
		{"since an id never logged", func() ([]*domain.LiveEvent, bool, error) { return eventLog.Since(t.Context(), "ses_log", "1-1") }, false, 0},
		{"after a token", after("ses_log", "msg_r:1"), true, 2},
		{"after the user message", after("ses_log", "msg_u:1"), true, 1},
		{"after a seq never sent", after("ses_log", "msg_r:9"), false, 0},
		{"after another session's event", after("ses_other", "msg_r:1"), false, len(all)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := tt.read()
			if err != nil {
				t.Fatal(err)
			}
			if found != tt.wantFound {
				t.Errorf("found = %v, want %v", found, tt.wantFound)
			}
			if tt.name == "after another session's event" {
				if len(got) != 0 {
					t.Errorf("read %d events of an empty log", len(got))
				}
				return
			}
			if len(got) != len(all)-tt.wantFrom {
				t.Fatalf("got %d events, want %d", len(got), len(all)-tt.wantFrom)
			}
			for i, ev := range got {
				if ev.LogID != all[tt.wantFrom+i].LogID {
					t.Errorf("event %d is %s, want %s", i, ev.LogID, all[tt.wantFrom+i].LogID)
				}
			}
		})
	}
}

// After pages backwards through a long log; the log is trimmed to about its
// maximum length and expires after its retention.
func TestEventLogRetention(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	bus := redisadapter.NewEventBus(client).WithRetention(redisadapter.LogRetention{MaxLen: 1000, TTL: 30 * time.Second})
	eventLog := redisadapter.NewEventLog(client)
	const n = 3000
	batch := make([]domain.SessionEvent, 0, 100)
	for i := 1; i <= n; i++ {
		batch = append(batch, domain.SessionEvent{Type: domain.EventToken, SessionID: "ses_long", MessageID: "msg_long", Seq: i, Content: fmt.Sprint(i, " ")})
		if len(batch) == cap(batch) {
			if err := bus.Publish(t.Context(), batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	length, err := client.XLen(t.Context(), redisadapter.LogKeyFor("ses_long")).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Approximate trimming removes whole blocks (100 entries by default).
	if length < 1000 || length > 1200 {
		t.Errorf("log length %d, want about 1000", length)
	}
	ttl, err := client.PTTL(t.Context(), redisadapter.LogKeyFor("ses_long")).Result()
	if err != nil || ttl <= 0 || ttl > 30*time.Second {
		t.Errorf("log expiry %s, %v; want at most 30 s", ttl, err)
	}
	// Far back: several pages.
	seq := n - 900
	got, at, err := eventLog.After(t.Context(), "ses_long", fmt.Sprint("msg_long:", seq))
	if err != nil || at == "" {
		t.Fatalf("After(%d) found %q, %v", seq, at, err)
	}
	if len(got) != n-seq {
		t.Fatalf("After(%d) returned %d events, want %d", seq, len(got), n-seq)
	}
	for i, ev := range got {
		if ev.Seq != seq+1+i {
			t.Fatalf("event %d has seq %d, want %d", i, ev.Seq, seq+1+i)
		}
	}
	// Trimmed away: not found, and the whole log instead.
	got, at, err = eventLog.After(t.Context(), "ses_long", "msg_long:5")
	if err != nil || at != "" || int64(len(got)) != length {
		t.Errorf("After a trimmed event: found %q, %d events, %v; want not found and all %d", at, len(got), err, length)
	}
}
