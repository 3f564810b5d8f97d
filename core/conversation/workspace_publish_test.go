package conversation

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// workspaceLog is a ports.WorkspaceEventLog that records what it is given
// and fails while down.
type workspaceLog struct {
	mu       sync.Mutex
	down     bool
	attempts int
	events   []domain.WorkspaceEvent
}

func (l *workspaceLog) Append(_ context.Context, events []domain.WorkspaceEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts++
	if l.down {
		return domain.Unavailable("redis", errors.New("connection refused"))
	}
	l.events = append(l.events, events...)
	return nil
}

func (l *workspaceLog) After(context.Context, string, string, int) ([]domain.WorkspaceEvent, bool, error) {
	return nil, true, nil
}

func (l *workspaceLog) Tail(context.Context, string) (string, error) { return "", nil }

func (l *workspaceLog) appended() []domain.WorkspaceEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]domain.WorkspaceEvent(nil), l.events...)
}

func (l *workspaceLog) setDown(down bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = down
}

func worldWithWorkspaceLog() (*world, *workspaceLog) {
	w := newWorld()
	log := &workspaceLog{}
	d := w.lifecycle.d
	d.WorkspaceEvents = log
	w.lifecycle = New(d)
	return w, log
}

// Every publication derives the workspace events of what it publishes: a
// message event's message (content cut to 500 characters), a status
// change, an answer's reply on its done; never tokens or errors. Each gets
// its conversation's workspace and agent; a conversation that no longer
// exists gets none.
func TestPublicationsDeriveWorkspaceEvents(t *testing.T) {
	w, log := worldWithWorkspaceLog()
	conv := w.session(w.agent, domain.StatusAI, "")
	question := w.question(conv, strings.Repeat("é", 600))
	question.WorkspaceID = "" // the lifecycle finds it
	reply := domain.Message{ID: domain.NewID(domain.PrefixMessage), Content: "We ship to Norway.", CreatedAt: testNow}
	notice := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: w.ws.ID, ConversationID: conv.ID, Role: domain.RoleSystem,
		Status: domain.StatusHandoffRequested, CreatedAt: testNow}
	human := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: w.ws.ID, ConversationID: conv.ID, Role: domain.RoleHuman,
		Content: "Marta here.", AuthorName: "Marta", CreatedAt: testNow}

	p := w.lifecycle.NewPublication(context.Background())
	p.Send(domain.MessageEvent(question))
	p.Send(domain.SessionEvent{Type: domain.EventToken, SessionID: conv.ID, MessageID: reply.ID, Seq: 1, Content: "We ship"},
		domain.SessionEvent{Type: domain.EventDone, SessionID: conv.ID, MessageID: reply.ID, Seq: 2, Answer: &domain.Answer{Reply: reply}},
		domain.SessionEvent{Type: domain.EventError, SessionID: conv.ID, MessageID: "msg_x", Seq: 1, ErrorCode: domain.CodeInternal})
	p.Close()
	w.lifecycle.PublishMessages(context.Background(), notice, human)
	// A conversation deleted meanwhile: nothing to show.
	w.lifecycle.Publish(context.Background(), domain.SessionEvent{Type: domain.EventStatus, SessionID: "ses_gone", MessageID: "msg_g", Seq: 1, Status: domain.StatusResolved})

	got := log.appended()
	want := []struct {
		typ     string
		status  domain.ConversationStatus
		role    domain.Role
		content string
	}{
		{domain.WorkspaceEventMessageCreated, "", domain.RoleUser, strings.Repeat("é", domain.WorkspaceEventContentMax)},
		{domain.WorkspaceEventMessageCreated, "", domain.RoleAssistant, "We ship to Norway."},
		{domain.WorkspaceEventConversationStatus, domain.StatusHandoffRequested, "", ""},
		{domain.WorkspaceEventMessageCreated, "", domain.RoleHuman, "Marta here."},
	}
	if len(got) != len(want) {
		t.Fatalf("appended %d events, want %d: %+v", len(got), len(want), got)
	}
	for i, wt := range want {
		ev := got[i]
		if ev.Type != wt.typ || ev.Status != wt.status || ev.WorkspaceID != w.ws.ID || ev.ConversationID != conv.ID || ev.AgentID != w.agent.ID || ev.At.IsZero() {
			t.Errorf("event %d: %+v, want %s %s of %s (agent %s)", i, ev, wt.typ, wt.status, conv.ID, w.agent.ID)
			continue
		}
		if wt.role == "" {
			if ev.Message != nil {
				t.Errorf("event %d carries a message: %+v", i, ev.Message)
			}
			continue
		}
		if ev.Message == nil || ev.Message.Role != wt.role || ev.Message.Content != wt.content || ev.Message.ConversationID != conv.ID {
			t.Errorf("event %d: message %+v, want %s %q", i, ev.Message, wt.role, wt.content)
		}
	}
	if got[3].Message.AuthorName != "Marta" {
		t.Errorf("the reply lost its author: %+v", got[3].Message)
	}
}

// A conversation's own publication carries its workspace and agent into
// the workspace events without reading the store: the events of a
// conversation the store does not have (yet) are appended with them, where
// a plain publication drops them as a deleted conversation's. An event of
// another conversation sent on it is still looked up.
func TestConversationPublicationKnowsItsOwners(t *testing.T) {
	w, log := worldWithWorkspaceLog()
	unstored := domain.NewConversation(w.ws.ID, &w.agent, "", testNow)
	stored := w.session(w.agent, domain.StatusAI, "")
	question := w.question(unstored, "Do you ship to Norway?")
	question.WorkspaceID = ""

	plain := w.lifecycle.NewPublication(context.Background())
	plain.Send(domain.MessageEvent(question))
	plain.Close()
	if got := log.appended(); len(got) != 0 {
		t.Fatalf("a plain publication appended %+v for a conversation the store lacks, want it dropped", got)
	}

	p := w.lifecycle.NewConversationPublication(context.Background(), unstored)
	p.Send(domain.MessageEvent(question), domain.MessageEvent(w.question(stored, "And to Iceland?")))
	p.Close()
	got := log.appended()
	if len(got) != 2 {
		t.Fatalf("appended %d events, want 2: %+v", len(got), got)
	}
	for i, conv := range []domain.Conversation{unstored, stored} {
		if ev := got[i]; ev.ConversationID != conv.ID || ev.WorkspaceID != w.ws.ID || ev.AgentID != w.agent.ID {
			t.Errorf("event %d: %+v, want conversation %s of workspace %s, agent %s", i, ev, conv.ID, w.ws.ID, w.agent.ID)
		}
	}
}

// PublishWorkspace never holds its caller up longer than PublishWait while
// Redis is away, and the events still go out, once, when it is back; an
// event given without its agent gets the conversation's.
func TestPublishWorkspaceWaitsOutAnOutage(t *testing.T) {
	w, log := worldWithWorkspaceLog()
	conv := w.session(w.agent, domain.StatusHuman, "")
	log.setDown(true)
	start := time.Now()
	w.lifecycle.PublishWorkspace(context.Background(), domain.WorkspaceEvent{
		Type: domain.WorkspaceEventConversationAssigned, WorkspaceID: w.ws.ID, ConversationID: conv.ID, AssigneeID: "usr_1", Status: domain.StatusHuman,
	})
	// The margin is for a loaded machine; holding the caller until Redis
	// is back would never end, as Redis comes back only below.
	if d := time.Since(start); d > PublishWait+2*time.Second {
		t.Fatalf("PublishWorkspace held its caller %s while Redis was away", d)
	}
	log.setDown(false)
	waitUntil(t, "the event is appended once Redis is back", func() bool { return len(log.appended()) == 1 })
	ev := log.appended()[0]
	if ev.AgentID != w.agent.ID || ev.AssigneeID != "usr_1" || ev.At.IsZero() {
		t.Fatalf("appended %+v", ev)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(log.appended()); n != 1 {
		t.Fatalf("appended %d times", n)
	}
}

// Without a workspace log nothing is derived and PublishWorkspace is a
// no-op (processes and tests that follow no workspace).
func TestNoWorkspaceLogNoWorkspaceEvents(t *testing.T) {
	w := newWorld()
	conv := w.session(w.agent, domain.StatusAI, "")
	w.lifecycle.PublishMessages(context.Background(), w.question(conv, "Hello"))
	w.lifecycle.PublishWorkspace(context.Background(), domain.WorkspaceEvent{Type: domain.WorkspaceEventConversationStatus, ConversationID: conv.ID})
	if evs, _ := w.bus.published(); len(evs) != 1 {
		t.Fatalf("the session's event: %d published", len(evs))
	}
}

// A change of assignees made outside core/assignment (a member's removal)
// is reported as assignments are: the report gives each conversation's
// conversation.assigned delivery when the workspace has an events URL, and
// Reassigned schedules what was written and publishes one
// conversation.assigned per conversation, with its assignee as left ("",
// unassigned).
func TestAssigneeReportAndReassigned(t *testing.T) {
	w, log := worldWithWorkspaceLog()
	ctx := t.Context()
	a, b := w.session(w.agent, domain.StatusHuman, ""), w.session(w.agent, domain.StatusHandoffRequested, "")
	tests := []struct {
		workspace string
		want      int // deliveries per conversation
	}{
		{w.ws.ID, 1},    // an events URL
		{w.other.ID, 0}, // none
	}
	for _, tt := range tests {
		report, err := w.lifecycle.AssigneeReport(ctx, tt.workspace)
		if err != nil {
			t.Fatal(err)
		}
		if got := report(a); len(got) != tt.want || (tt.want == 1 && (got[0].Type != domain.EventConversationAssigned || got[0].ConversationID != a.ID)) {
			t.Errorf("%s: report gives %+v, want %d conversation.assigned", tt.workspace, got, tt.want)
		}
	}
	if _, err := w.lifecycle.AssigneeReport(ctx, domain.NewID(domain.PrefixWorkspace)); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("an unknown workspace: %v, want not found", err)
	}

	report, _ := w.lifecycle.AssigneeReport(ctx, w.ws.ID)
	deliveries := append(report(a), report(b)...)
	w.lifecycle.Reassigned(ctx, deliveries, a, b)
	if s := w.queue.scheduled(); len(s) != 2 {
		t.Errorf("scheduled %v, want the two deliveries", s)
	}
	events := log.appended()
	if len(events) != 2 {
		t.Fatalf("published %+v, want two conversation.assigned", events)
	}
	for i, c := range []domain.Conversation{a, b} {
		ev := events[i]
		if ev.Type != domain.WorkspaceEventConversationAssigned || ev.ConversationID != c.ID || ev.AssigneeID != "" ||
			ev.Status != c.Status || ev.WorkspaceID != w.ws.ID || ev.AgentID != w.agent.ID {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
}
