package relay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// wsWorld is a workspace's log and feed as the workspace streams see
// them: positions are "<n>-0"; the log keeps the events from first on
// (older ones were trimmed); append wakes every watcher unless told not
// to (a lost wake-up).
type wsWorld struct {
	mu        sync.Mutex
	events    []domain.WorkspaceEvent // all ever appended; [first:] are kept
	first     int
	failReads bool
	subs      []*wsSub
}

func (w *wsWorld) append(wake bool, conv string) domain.WorkspaceEvent {
	w.mu.Lock()
	ev := domain.WorkspaceEvent{ID: strconv.Itoa(len(w.events)+1) + "-0", Type: domain.WorkspaceEventConversationStatus,
		WorkspaceID: "ws_1", ConversationID: conv, Status: domain.StatusHandoffRequested}
	w.events = append(w.events, ev)
	subs := append([]*wsSub(nil), w.subs...)
	w.mu.Unlock()
	if wake {
		for _, s := range subs {
			s.events <- &domain.LiveEvent{Gap: true}
		}
	}
	return ev
}

func (w *wsWorld) trim(keepFrom int) { w.mu.Lock(); w.first = keepFrom; w.mu.Unlock() }

func (w *wsWorld) setFailing(fail bool) { w.mu.Lock(); w.failReads = fail; w.mu.Unlock() }

func pos(id string) int {
	if id == "" {
		return 0
	}
	n, err := strconv.Atoi(id[:len(id)-2])
	if err != nil {
		panic(id)
	}
	return n
}

func (w *wsWorld) After(_ context.Context, _, afterID string, limit int) ([]domain.WorkspaceEvent, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failReads {
		return nil, false, domain.Unavailable("redis", errors.New("down"))
	}
	if afterID == "bad" {
		return nil, false, &domain.ValidationError{Message: "bad", Fields: map[string]string{"lastEventId": "is not an event id"}}
	}
	after := pos(afterID)
	if afterID == "" { // the start of the log, as the adapter reads it
		after = w.first
	}
	if after < w.first { // the entry after it was trimmed
		return nil, false, nil
	}
	out := w.events[after:]
	return append([]domain.WorkspaceEvent(nil), out[:min(limit, len(out))]...), true, nil
}

func (w *wsWorld) Tail(context.Context, string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failReads {
		return "", domain.Unavailable("redis", errors.New("down"))
	}
	if len(w.events) == 0 {
		return "", nil
	}
	return w.events[len(w.events)-1].ID, nil
}

func (w *wsWorld) Append(context.Context, []domain.WorkspaceEvent) error { return errors.New("unused") }

func (w *wsWorld) Watch(context.Context, string) (ports.Subscription, error) {
	s := &wsSub{events: make(chan *domain.LiveEvent, 64), done: make(chan struct{})}
	w.mu.Lock()
	w.subs = append(w.subs, s)
	w.mu.Unlock()
	return s, nil
}

type wsSub struct {
	events chan *domain.LiveEvent
	done   chan struct{}
	once   sync.Once
	err    error
}

func (s *wsSub) Events() <-chan *domain.LiveEvent { return s.events }
func (s *wsSub) Done() <-chan struct{}            { return s.done }
func (s *wsSub) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}
func (s *wsSub) Close()        { s.end(nil) }
func (s *wsSub) end(err error) { s.once.Do(func() { s.err = err; close(s.done) }) }
func (w *wsWorld) sub() *wsSub { w.mu.Lock(); defer w.mu.Unlock(); return w.subs[len(w.subs)-1] }

// wsSink records what a stream writes, one line per frame.
type wsSink struct{ out chan string }

func (s *wsSink) Send(ev domain.WorkspaceEvent) error { s.out <- ev.ID; return nil }
func (s *wsSink) Reset() error                        { s.out <- "reset"; return nil }
func (s *wsSink) Fail(code, _ string) error           { s.out <- "error " + code; return nil }
func (s *wsSink) KeepAlive() error                    { return nil }

func (s *wsSink) next(t *testing.T) string {
	t.Helper()
	select {
	case got := <-s.out:
		return got
	case <-time.After(5 * time.Second):
		t.Fatal("nothing written within 5 s")
	}
	return ""
}

func (s *wsSink) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case got := <-s.out:
		t.Fatalf("wrote %q, want nothing", got)
	case <-time.After(d):
	}
}

func openWS(t *testing.T, w *wsWorld, opts Options, lastEventID string) (*wsSink, chan error) {
	t.Helper()
	s := NewService(Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Workspace: WorkspaceDeps{Log: w, Feed: w}}, opts)
	st, err := s.OpenWorkspace(t.Context(), "ws_1", lastEventID)
	if err != nil {
		t.Fatalf("OpenWorkspace(%q): %v", lastEventID, err)
	}
	sink := &wsSink{out: make(chan string, 64)}
	ended := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { ended <- st.Run(ctx, sink) }()
	return sink, ended
}

func TestWorkspaceStream(t *testing.T) {
	slow := Options{KeepAlive: time.Hour}
	t.Run("resumes after Last-Event-ID, then live", func(t *testing.T) {
		w := &wsWorld{}
		for range 3 {
			w.append(false, "ses_a")
		}
		sink, _ := openWS(t, w, slow, "1-0")
		if a, b := sink.next(t), sink.next(t); a != "2-0" || b != "3-0" {
			t.Fatalf("replay %s %s", a, b)
		}
		w.append(true, "ses_b")
		if got := sink.next(t); got != "4-0" {
			t.Fatalf("live %s", got)
		}
		sink.quiet(t, 50*time.Millisecond)
	})
	t.Run("without an id starts with the next event", func(t *testing.T) {
		w := &wsWorld{}
		w.append(false, "ses_a")
		sink, _ := openWS(t, w, slow, "")
		w.append(true, "ses_a")
		if got := sink.next(t); got != "2-0" {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("a forgotten position resets, then live from the tail", func(t *testing.T) {
		w := &wsWorld{}
		for range 5 {
			w.append(false, "ses_a")
		}
		w.trim(3)
		sink, _ := openWS(t, w, slow, "1-0")
		if got := sink.next(t); got != "reset" {
			t.Fatalf("got %s, want a reset", got)
		}
		w.append(true, "ses_a")
		if got := sink.next(t); got != "6-0" {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("falling behind what the log keeps while following resets", func(t *testing.T) {
		w := &wsWorld{}
		w.append(false, "ses_a")
		sink, _ := openWS(t, w, slow, "")
		for range 3 {
			w.append(false, "ses_a")
		}
		w.trim(2)
		w.append(true, "ses_a")
		if got := sink.next(t); got != "reset" {
			t.Fatalf("got %s, want a reset", got)
		}
		w.append(true, "ses_a")
		if got := sink.next(t); got != "6-0" {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("a lost wake-up is covered by the keep-alive's read", func(t *testing.T) {
		w := &wsWorld{}
		sink, _ := openWS(t, w, Options{KeepAlive: 50 * time.Millisecond}, "")
		w.append(false, "ses_a")
		if got := sink.next(t); got != "1-0" {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("an outage shorter than the limit ends in catch-up", func(t *testing.T) {
		w := &wsWorld{}
		sink, _ := openWS(t, w, Options{KeepAlive: 20 * time.Millisecond, OutageLimit: 5 * time.Second}, "")
		w.setFailing(true)
		w.append(true, "ses_a")
		w.append(true, "ses_a")
		sink.quiet(t, 200*time.Millisecond)
		w.setFailing(false)
		if a, b := sink.next(t), sink.next(t); a != "1-0" || b != "2-0" {
			t.Fatalf("caught up %s %s", a, b)
		}
	})
	t.Run("a replay longer than a page is sent whole, without a wake-up", func(t *testing.T) {
		w := &wsWorld{}
		for range 2*workspacePage + 50 {
			w.append(false, "ses_a")
		}
		sink, _ := openWS(t, w, slow, "1-0")
		for i := 2; i <= 2*workspacePage+50; i++ {
			if got, want := sink.next(t), strconv.Itoa(i)+"-0"; got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		}
		sink.quiet(t, 50*time.Millisecond)
	})
	t.Run("a failed read is retried soon, not at the next keep-alive", func(t *testing.T) {
		w := &wsWorld{}
		sink, _ := openWS(t, w, Options{KeepAlive: time.Hour, OutageLimit: time.Hour}, "")
		w.setFailing(true)
		w.append(true, "ses_a")
		sink.quiet(t, 100*time.Millisecond)
		// Redis is back; no wake-up comes, and the keep-alive is an hour away.
		w.setFailing(false)
		if got := sink.next(t); got != "1-0" {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("an outage past the limit ends the stream with an error", func(t *testing.T) {
		w := &wsWorld{}
		sink, ended := openWS(t, w, Options{KeepAlive: 20 * time.Millisecond, OutageLimit: 100 * time.Millisecond}, "")
		w.setFailing(true)
		if got := sink.next(t); got != "error UNAVAILABLE" {
			t.Fatalf("got %s", got)
		}
		if err := <-ended; !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("Run: %v", err)
		}
	})
	t.Run("the feed giving up on Redis ends with an error; shutting down without", func(t *testing.T) {
		for _, tc := range []struct {
			err  error
			want string
		}{{domain.Unavailable("redis", errors.New("gone")), "error UNAVAILABLE"}, {ports.ErrFeedClosed, ""}} {
			w := &wsWorld{}
			sink, ended := openWS(t, w, slow, "")
			w.sub().end(tc.err)
			<-ended
			select {
			case got := <-sink.out:
				if got != tc.want {
					t.Fatalf("%v: wrote %q, want %q", tc.err, got, tc.want)
				}
			default:
				if tc.want != "" {
					t.Fatalf("%v: wrote nothing, want %q", tc.err, tc.want)
				}
			}
		}
	})
	t.Run("a malformed id is refused before streaming", func(t *testing.T) {
		w := &wsWorld{}
		s := NewService(Deps{Log: slog.New(slog.DiscardHandler), Workspace: WorkspaceDeps{Log: w, Feed: w}}, Options{})
		_, err := s.OpenWorkspace(t.Context(), "ws_1", "bad")
		var verr *domain.ValidationError
		if !errors.As(err, &verr) {
			t.Fatalf("err %v, want a ValidationError", err)
		}
		select {
		case <-w.sub().done:
		default:
			t.Fatal("the refused stream kept its subscription")
		}
	})
}
