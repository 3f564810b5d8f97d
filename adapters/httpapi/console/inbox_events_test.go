package console_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/relay"
)

// The relay fits the console's opener through the wiring's adapter; the
// fake stands for it: it records what it was asked and streams one event
// of the asked workspace, then ends.
type fakeEvents struct {
	mu     sync.Mutex
	opened []string // "<workspace> <lastEventID>"
}

func (f *fakeEvents) OpenWorkspace(_ context.Context, workspaceID, lastEventID string) (sse.WorkspaceStream, error) {
	f.mu.Lock()
	f.opened = append(f.opened, workspaceID+" "+lastEventID)
	f.mu.Unlock()
	if lastEventID == "bad" {
		return nil, &domain.ValidationError{Message: "Last-Event-ID must be the id of an event of this stream",
			Fields: map[string]string{"lastEventId": "is not an event id"}}
	}
	return fakeWorkspaceStream{workspaceID}, nil
}

func (f *fakeEvents) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.opened...)
}

type fakeWorkspaceStream struct{ workspaceID string }

func (s fakeWorkspaceStream) Run(_ context.Context, sink relay.WorkspaceSink) error {
	return sink.Send(domain.WorkspaceEvent{ID: "1700000000000-0", Type: domain.WorkspaceEventConversationStatus,
		WorkspaceID: s.workspaceID, ConversationID: convA, Status: domain.StatusHandoffRequested,
		At: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)})
}

// Owners, admins and helpers follow their workspace's events; a user of
// another workspace gets 404 and the stream is never opened for them;
// signed out is sent to sign in.
func TestInboxEventsRoleMatrix(t *testing.T) {
	const ok, see, nf = http.StatusOK, http.StatusSeeOther, http.StatusNotFound
	type want = roleStatuses
	routes := []struct {
		path string
		want want
	}{
		{"/console/w/ws_a/inbox/events", want{ok, ok, ok, nf, see}},
		// Tenant isolation: "other" is ws_b's only member here.
		{"/console/w/ws_b/inbox/events", want{nf, nf, nf, ok, see}},
		{"/console/w/ws_nope/inbox/events", want{nf, nf, nf, nf, see}},
	}
	for _, rt := range routes {
		for _, who := range rt.want.roles() {
			t.Run(rt.path+" as "+who.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				r := h.do(t, req{Path: rt.path, As: who.as})
				if r.Status != who.want {
					t.Fatalf("status %d, want %d; Location %q; body:\n%s", r.Status, who.want, r.location(), r.Body)
				}
				switch who.want {
				case see:
					if !strings.HasPrefix(r.location(), "/console/sign-in") {
						t.Fatalf("signed out: Location %q, want the sign-in page", r.location())
					}
				case nf:
					if !strings.Contains(r.Body, "There is nothing here, or you do not have access to it.") {
						t.Fatalf("404 without the not-found page:\n%s", r.Body)
					}
				case ok:
					ws := strings.Split(rt.path, "/")[3]
					if got := h.events.calls(); len(got) != 1 || got[0] != ws+" " {
						t.Fatalf("opened %q, want the URL's workspace %s", got, ws)
					}
					if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
						t.Fatalf("Content-Type %q", ct)
					}
					want := "id: 1700000000000-0\nevent: conversation.status\ndata: {\"type\":\"conversation.status\",\"conversationId\":\"" + convA +
						"\",\"status\":\"HANDOFF_REQUESTED\",\"at\":\"2026-11-27T10:00:00.000Z\"}\n\n"
					if !strings.Contains(r.Body, want) {
						t.Fatalf("body:\n%s\nwant the event:\n%s", r.Body, want)
					}
				}
				if who.want != ok && len(h.events.calls()) != 0 {
					t.Fatalf("a refused request opened a stream: %q", h.events.calls())
				}
			})
		}
	}
}

// The member's Last-Event-ID reaches the stream (header first, then the
// query parameter); one that is not an event id is the 400 page before
// anything is streamed; a console built without the stream answers 503.
func TestInboxEventsResumeAndBadInput(t *testing.T) {
	h := newHarness(t, publicURL)
	h.do(t, req{Path: "/console/w/ws_a/inbox/events", As: "agent", Header: map[string]string{"Last-Event-ID": "1700000000000-0"}})
	h.do(t, req{Path: "/console/w/ws_a/inbox/events?lastEventId=1700000000001-3", As: "agent"})
	if got := h.events.calls(); len(got) != 2 || got[0] != "ws_a 1700000000000-0" || got[1] != "ws_a 1700000000001-3" {
		t.Fatalf("opened %q", got)
	}
	r := h.do(t, req{Path: "/console/w/ws_a/inbox/events", As: "agent", Header: map[string]string{"Last-Event-ID": "bad"}})
	if r.Status != http.StatusBadRequest || strings.Contains(r.Body, "event: ") {
		t.Fatalf("bad Last-Event-ID: status %d:\n%s", r.Status, r.Body)
	}

	bare, err := console.New(h.accounts, fakeWorkspaces{names: map[string]string{"ws_a": "Acme"}}, h.agents, console.Options{PublicURL: publicURL})
	if err != nil {
		t.Fatal(err)
	}
	h.app = newApp(bare)
	if r := h.do(t, req{Path: "/console/w/ws_a/inbox/events", As: "agent"}); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("without the stream: status %d:\n%s", r.Status, r.Body)
	}
}
