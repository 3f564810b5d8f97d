package conversation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Find applies one set of identity rules for every session route: anything
// a caller may not see is the same 404, so nothing can be probed.
func TestFind(t *testing.T) {
	w := newWorld()
	open := w.session(w.agent, domain.StatusAI, "")
	verified := w.session(w.agent, domain.StatusAI, "u_1")
	drafted := w.session(w.draft, domain.StatusAI, "")
	foreign := w.session(domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: w.other.ID, Slug: "x", Config: domain.AgentConfig{Published: true}}, domain.StatusAI, "")
	u1 := "eyJ1c2VySWQiOiJ1XzEifQ" // {"userId":"u_1"}
	u2 := "eyJ1c2VySWQiOiJ1XzIifQ" // {"userId":"u_2"}
	tests := []struct {
		name      string
		ref       SessionRef
		wantErr   error
		wantConv  string
		wantAgent string
	}{
		{"keyless", SessionRef{ID: open.ID}, nil, open.ID, w.agent.ID},
		{"keyed", SessionRef{Workspace: &w.ws, ID: open.ID}, nil, open.ID, w.agent.ID},
		{"keyed, unpublished agent", SessionRef{Workspace: &w.ws, ID: drafted.ID}, nil, drafted.ID, w.draft.ID},
		{"keyless, unpublished agent", SessionRef{ID: drafted.ID}, domain.ErrNotFound, "", ""},
		{"keyed, another workspace's session", SessionRef{Workspace: &w.ws, ID: foreign.ID}, domain.ErrNotFound, "", ""},
		{"unknown", SessionRef{ID: domain.NewID(domain.PrefixSession)}, domain.ErrNotFound, "", ""},
		{"malformed", SessionRef{ID: "ses_nope"}, domain.ErrNotFound, "", ""},
		{"an id of another kind", SessionRef{Workspace: &w.ws, ID: w.ws.ID}, domain.ErrNotFound, "", ""},
		{"empty", SessionRef{Workspace: &w.ws}, domain.ErrNotFound, "", ""},
		{"the verified user", SessionRef{ID: verified.ID, IdentityHeader: u1, SignatureHeader: domain.SignIdentity(w.ws.WebhookSecret, u1)}, nil, verified.ID, w.agent.ID},
		{"another verified user", SessionRef{ID: verified.ID, IdentityHeader: u2, SignatureHeader: domain.SignIdentity(w.ws.WebhookSecret, u2)}, domain.ErrNotFound, "", ""},
		{"another verified user, keyed", SessionRef{Workspace: &w.ws, ID: verified.ID, IdentityHeader: u2, SignatureHeader: domain.SignIdentity(w.ws.WebhookSecret, u2)}, domain.ErrNotFound, "", ""},
		{"signed with another secret", SessionRef{ID: verified.ID, IdentityHeader: u1, SignatureHeader: domain.SignIdentity("whsec_x", u1)}, domain.ErrUnauthorized, "", ""},
		{"identity without signature", SessionRef{ID: open.ID, IdentityHeader: u1}, domain.ErrInvalidInput, "", ""},
		{"no identity on a verified user's session", SessionRef{ID: verified.ID}, nil, verified.ID, w.agent.ID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.lifecycle.Find(t.Context(), tt.ref)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if errors.Is(tt.wantErr, domain.ErrNotFound) && err.Error() != domain.NotFound("session").Error() {
				t.Errorf("err = %q, want the one session 404", err)
			}
			if err != nil {
				return
			}
			if got.Conversation.ID != tt.wantConv || got.Agent.ID != tt.wantAgent || got.Workspace.ID != w.ws.ID {
				t.Errorf("found %s of agent %s in %s, want %s of %s in %s", got.Conversation.ID, got.Agent.ID, got.Workspace.ID, tt.wantConv, tt.wantAgent, w.ws.ID)
			}
		})
	}
}

// Append stores a visitor's message under the state the caller read,
// deciding again when the state moved under it, reopening a resolved
// conversation in the same write, and gives up after StatusAttempts.
func TestAppend(t *testing.T) {
	tests := []struct {
		name   string
		status domain.ConversationStatus
		// moves are the states a concurrent request moves the conversation
		// to before each of the append's writes (none: it holds still).
		moves         []domain.ConversationStatus
		wantErr       error
		wantStatus    domain.ConversationStatus // of Appended.Conversation
		wantNotice    bool
		wantReplyID   bool
		wantStored    []domain.Role
		wantScheduled bool
	}{
		{name: "AI", status: domain.StatusAI, wantStatus: domain.StatusAI, wantReplyID: true, wantStored: []domain.Role{domain.RoleUser}, wantScheduled: true},
		{name: "a person owns it: no reply awaited", status: domain.StatusHuman, wantStatus: domain.StatusHuman, wantStored: []domain.Role{domain.RoleUser}, wantScheduled: true},
		{name: "resolved: reopened with the message first", status: domain.StatusResolved, wantStatus: domain.StatusAI, wantNotice: true, wantReplyID: true,
			wantStored: []domain.Role{domain.RoleUser, domain.RoleSystem}, wantScheduled: true},
		{name: "taken over under it: decided again", status: domain.StatusAI, moves: []domain.ConversationStatus{domain.StatusHuman},
			wantStatus: domain.StatusHuman, wantStored: []domain.Role{domain.RoleUser}, wantScheduled: true},
		{name: "resolved under it: reopened", status: domain.StatusAI, moves: []domain.ConversationStatus{domain.StatusResolved},
			wantStatus: domain.StatusAI, wantNotice: true, wantReplyID: true, wantStored: []domain.Role{domain.RoleUser, domain.RoleSystem}, wantScheduled: true},
		{name: "never holds still", status: domain.StatusAI,
			moves:   []domain.ConversationStatus{domain.StatusHuman, domain.StatusAI, domain.StatusHuman, domain.StatusAI},
			wantErr: domain.ErrStatusChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			conv := w.session(w.agent, tt.status, "")
			w.store.beforeWrite = func(n int) {
				if n <= len(tt.moves) {
					w.store.setStatus(conv.ID, tt.moves[n-1])
				}
			}
			msg := w.question(conv, "hello")
			read := conv
			got, err := w.lifecycle.Append(t.Context(), &w.ws, conv, msg)
			if conv != read {
				t.Error("Append changed the caller's conversation")
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if n := len(w.store.messages(conv.ID)); n != 0 {
					t.Errorf("%d messages stored by a failed append", n)
				}
				if w.store.writes != StatusAttempts {
					t.Errorf("%d writes, want %d (StatusAttempts)", w.store.writes, StatusAttempts)
				}
				return
			}
			if got.Conversation.Status != tt.wantStatus || got.Conversation.ID != conv.ID {
				t.Errorf("appended under %s (%s), want %s", got.Conversation.Status, got.Conversation.ID, tt.wantStatus)
			}
			if (got.Notice != nil) != tt.wantNotice || !got.Created {
				t.Errorf("notice %v, created %v; want notice %v, created", got.Notice, got.Created, tt.wantNotice)
			}
			if (got.Message.ReplyID != "") != tt.wantReplyID {
				t.Errorf("ReplyID %q, want set %v", got.Message.ReplyID, tt.wantReplyID)
			}
			var roles []domain.Role
			for _, m := range w.store.messages(conv.ID) {
				roles = append(roles, m.Role)
			}
			if !equalRoles(roles, tt.wantStored) {
				t.Errorf("stored %v, want %v", roles, tt.wantStored)
			}
			if n := len(got.Events()); n != len(tt.wantStored) {
				t.Errorf("%d events, want one per stored message", n)
			}
			if s := w.queue.scheduled(); (len(s) > 0) != tt.wantScheduled || len(s) != len(got.Deliveries) {
				t.Errorf("scheduled %v of %d deliveries", s, len(got.Deliveries))
			}
		})
	}
}

func equalRoles(a, b []domain.Role) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// An inbound event's message is stored once however often its task runs,
// even when the first run reopened the conversation.
func TestAppendInboundOnce(t *testing.T) {
	for _, status := range []domain.ConversationStatus{domain.StatusAI, domain.StatusResolved} {
		t.Run(string(status), func(t *testing.T) {
			w := newWorld()
			conv := w.session(w.agent, status, "")
			msg := w.question(conv, "from the webhook")
			msg.ReplyID, msg.InboundEventID = "", domain.NewID(domain.PrefixInboundEvent)
			first, err := w.lifecycle.Append(t.Context(), &w.ws, conv, msg)
			if err != nil || !first.Created {
				t.Fatalf("first run: created %v, err %v", first.Created, err)
			}
			again := msg
			again.ID = domain.NewID(domain.PrefixMessage)
			second, err := w.lifecycle.Append(t.Context(), &w.ws, conv, again)
			if err != nil || second.Created || second.Message.ID != msg.ID || len(second.Events()) != 0 {
				t.Fatalf("second run: created %v, message %s (want %s), %d events, err %v", second.Created, second.Message.ID, msg.ID, len(second.Events()), err)
			}
		})
	}
}

// Move is the one status move: a conditional change from the state read,
// with the transcript snapshot for a handoff request, decided again when
// the conversation changed under it, up to StatusAttempts.
func TestMove(t *testing.T) {
	refused := domain.Conflict("refused")
	tests := []struct {
		name   string
		status domain.ConversationStatus
		move   Move
		// moves are states a concurrent request moves the conversation to
		// before each of Move's writes; appends, messages it appends after
		// each transcript read.
		moves      []domain.ConversationStatus
		appends    int
		wantErr    error
		wantStatus domain.ConversationStatus
		wantNotice bool
		wantWrites int
	}{
		{name: "AI to handoff requested", status: domain.StatusAI, move: Move{To: domain.StatusHandoffRequested},
			wantStatus: domain.StatusHandoffRequested, wantNotice: true, wantWrites: 1},
		{name: "already there", status: domain.StatusHuman, move: Move{To: domain.StatusHuman}, wantStatus: domain.StatusHuman},
		{name: "not from the state asked", status: domain.StatusHuman, move: Move{From: domain.StatusAI, To: domain.StatusHandoffRequested}, wantStatus: domain.StatusHuman},
		{name: "forbidden, with the caller's error", status: domain.StatusHuman, move: Move{To: domain.StatusHandoffRequested, Refused: func(domain.Conversation) error { return refused }},
			wantErr: refused},
		{name: "moved under it, then decided again", status: domain.StatusAI, move: Move{To: domain.StatusResolved},
			moves: []domain.ConversationStatus{domain.StatusHuman}, wantStatus: domain.StatusResolved, wantNotice: true, wantWrites: 2},
		{name: "moved under it to where it was going", status: domain.StatusAI, move: Move{To: domain.StatusHuman},
			moves: []domain.ConversationStatus{domain.StatusHuman}, wantStatus: domain.StatusHuman, wantWrites: 1},
		{name: "a message raced the transcript once", status: domain.StatusAI, move: Move{To: domain.StatusHandoffRequested},
			appends: 1, wantStatus: domain.StatusHandoffRequested, wantNotice: true, wantWrites: 2},
		{name: "messages keep racing the transcript", status: domain.StatusAI, move: Move{To: domain.StatusHandoffRequested},
			appends: StatusAttempts, wantErr: domain.ErrStatusChanged, wantWrites: StatusAttempts},
		{name: "state never holds still", status: domain.StatusAI, move: Move{To: domain.StatusResolved},
			moves: []domain.ConversationStatus{domain.StatusHuman, domain.StatusAI, domain.StatusHuman}, wantErr: domain.ErrStatusChanged, wantWrites: StatusAttempts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			conv := w.session(w.agent, tt.status, "")
			w.store.beforeWrite = func(n int) {
				if n <= len(tt.moves) {
					w.store.setStatus(conv.ID, tt.moves[n-1])
				}
			}
			raced := 0
			w.store.afterTranscript = func() {
				if raced < tt.appends {
					raced++
					w.store.Put(w.store.conv(conv.ID), w.question(conv, "racing"))
				}
			}
			got, err := w.lifecycle.Move(t.Context(), &w.ws, conv, tt.move)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if w.store.writes != tt.wantWrites {
				t.Errorf("%d writes, want %d", w.store.writes, tt.wantWrites)
			}
			if err != nil {
				if len(w.store.changes) != 0 || len(w.queue.scheduled()) != 0 {
					t.Errorf("a failed move stored %d changes and scheduled %v", len(w.store.changes), w.queue.scheduled())
				}
				return
			}
			if got.Conversation.Status != tt.wantStatus || (got.Notice != nil) != tt.wantNotice {
				t.Errorf("moved to %s with notice %v; want %s, notice %v", got.Conversation.Status, got.Notice != nil, tt.wantStatus, tt.wantNotice)
			}
			if !tt.wantNotice {
				return
			}
			change := w.store.changes[len(w.store.changes)-1]
			if len(change.From) != 1 || change.From[0] == tt.wantStatus {
				t.Errorf("the change applies from %v: it must be conditional on the state read", change.From)
			}
			if tt.move.To == domain.StatusHandoffRequested && (change.MessageCount == nil || *change.MessageCount != w.store.conv(conv.ID).MessageCount-1) {
				t.Errorf("the handoff's transcript count is %v, want the count before its notice", change.MessageCount)
			}
			if s := w.queue.scheduled(); len(s) != len(got.Deliveries) || len(s) == 0 {
				t.Errorf("scheduled %v of %d deliveries", s, len(got.Deliveries))
			}
		})
	}
}

// A move to HANDOFF_REQUESTED records when the visitor asked, in the
// move's own write, on every request: a conversation asked for again after
// being resolved waits from the new request. Other moves keep the time.
func TestMoveStampsTheHandoffRequest(t *testing.T) {
	earlier := testNow.Add(-time.Hour)
	tests := []struct {
		name    string
		status  domain.ConversationStatus
		asked   time.Time // when the conversation last asked, before the move
		to      domain.ConversationStatus
		wantAsk time.Time
	}{
		{"first request", domain.StatusAI, time.Time{}, domain.StatusHandoffRequested, testNow},
		{"asked again after a resolution", domain.StatusResolved, earlier, domain.StatusHandoffRequested, testNow},
		{"asked again after the agent got it back", domain.StatusAI, earlier, domain.StatusHandoffRequested, testNow},
		{"taken over keeps the request", domain.StatusHandoffRequested, earlier, domain.StatusHuman, earlier},
		{"resolved keeps the request", domain.StatusHandoffRequested, earlier, domain.StatusResolved, earlier},
		{"never asked stays so", domain.StatusAI, time.Time{}, domain.StatusHuman, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			conv := w.session(w.agent, tt.status, "")
			conv.HandoffRequestedAt = tt.asked
			w.store.Put(conv)
			got, err := w.lifecycle.Move(t.Context(), &w.ws, conv, Move{To: tt.to})
			if err != nil || got.Notice == nil {
				t.Fatalf("Move = %+v, %v", got, err)
			}
			if !got.Conversation.HandoffRequestedAt.Equal(tt.wantAsk) {
				t.Errorf("returned request time %v, want %v", got.Conversation.HandoffRequestedAt, tt.wantAsk)
			}
			if stored := w.store.conv(conv.ID); !stored.HandoffRequestedAt.Equal(tt.wantAsk) {
				t.Errorf("stored request time %v, want %v", stored.HandoffRequestedAt, tt.wantAsk)
			}
		})
	}
}

// The motive of a move (a person's reply taking over) is stored after the
// notice, in the same write.
func TestMoveWithMotive(t *testing.T) {
	w := newWorld()
	conv := w.session(w.agent, domain.StatusAI, "")
	reply := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: w.ws.ID, ConversationID: conv.ID, Role: domain.RoleHuman, Content: "hi, Ada here", CreatedAt: testNow}
	got, err := w.lifecycle.Move(t.Context(), &w.ws, conv, Move{To: domain.StatusHuman, Author: "Ada", Motive: &reply})
	if err != nil || got.Notice == nil {
		t.Fatalf("moved %+v, err %v", got, err)
	}
	stored := w.store.messages(conv.ID)
	if len(stored) != 2 || stored[0].Role != domain.RoleSystem || stored[1].ID != reply.ID {
		t.Fatalf("stored %+v, want the notice then the reply", stored)
	}
}

// Open stores an empty conversation of the agent, a verified user's when
// there is an identity, and schedules what reports it.
func TestOpenAndAgentBySlug(t *testing.T) {
	w := newWorld()
	tests := []struct {
		slug    string
		want    string
		wantErr error
	}{
		{"", w.agent.ID, nil},
		{"draft", w.draft.ID, nil},
		{"sales", "", domain.ErrNotFound},
		{"Sales Team!", "", domain.ErrNotFound},
	}
	for _, tt := range tests {
		a, err := AgentBySlug(t.Context(), w.agentsByID, w.ws.ID, tt.slug)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && (err != nil || a.ID != tt.want)) {
			t.Errorf("AgentBySlug(%q) = %s, %v; want %s, %v", tt.slug, a.ID, err, tt.want, tt.wantErr)
		}
	}
	conv, err := w.lifecycle.Open(t.Context(), &w.ws, &w.agent, &domain.Identity{UserID: "u_1"})
	if err != nil {
		t.Fatal(err)
	}
	if stored := w.store.conv(conv.ID); stored.AgentID != w.agent.ID || stored.VerifiedUserID != "u_1" || stored.Status != domain.StatusAI {
		t.Errorf("stored %+v", stored)
	}
	if len(w.queue.scheduled()) != 1 {
		t.Errorf("scheduled %v, want conversation.created", w.queue.scheduled())
	}
}

// Poll finds the session as Find does and pages its messages.
func TestPoll(t *testing.T) {
	w := newWorld()
	conv := w.session(w.agent, domain.StatusAI, "")
	var ids []string
	for range 3 {
		a, err := w.lifecycle.Append(t.Context(), &w.ws, w.store.conv(conv.ID), w.question(conv, "q"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.Message.ID)
	}
	drafted := w.session(w.draft, domain.StatusAI, "")
	tests := []struct {
		name      string
		req       PollRequest
		wantErr   error
		wantFirst string
		wantMore  bool
	}{
		{"from the start", PollRequest{Session: SessionRef{ID: conv.ID}, Limit: 2}, nil, ids[0], true},
		{"after one", PollRequest{Session: SessionRef{ID: conv.ID}, After: ids[0]}, nil, ids[1], false},
		{"malformed after", PollRequest{Session: SessionRef{ID: conv.ID}, After: "nope"}, domain.ErrInvalidInput, "", false},
		{"unknown after", PollRequest{Session: SessionRef{ID: conv.ID}, After: domain.NewID(domain.PrefixMessage)}, domain.ErrInvalidInput, "", false},
		{"bad limit", PollRequest{Session: SessionRef{ID: conv.ID}, Limit: -1}, domain.ErrInvalidInput, "", false},
		{"unpublished agent, keyless", PollRequest{Session: SessionRef{ID: drafted.ID}}, domain.ErrNotFound, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.lifecycle.Poll(t.Context(), tt.req)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (got.Messages[0].ID != tt.wantFirst || got.HasMore != tt.wantMore || got.Conversation.ID != conv.ID) {
				t.Errorf("first %s, more %v; want %s, %v", got.Messages[0].ID, got.HasMore, tt.wantFirst, tt.wantMore)
			}
		})
	}
}

// Every capability publishes under one policy: at once when the bus is up;
// when it is down, the caller waits at most PublishWait and the events
// still go out, in order, once it is back within the budget.
func TestPublishPolicy(t *testing.T) {
	t.Run("bus up", func(t *testing.T) {
		w := newWorld()
		conv := w.session(w.agent, domain.StatusAI, "")
		m1, m2 := w.question(conv, "a"), w.question(conv, "b")
		w.lifecycle.PublishMessages(t.Context(), m1, m2)
		evs, attempts := w.bus.published()
		if attempts != 1 || len(evs) != 2 || evs[0].MessageID != m1.ID || evs[1].MessageID != m2.ID {
			t.Fatalf("published %+v in %d attempts, want both in order in one", evs, attempts)
		}
		w.lifecycle.Publish(t.Context())
		if _, n := w.bus.published(); n != 1 {
			t.Error("publishing nothing reached the bus")
		}
	})
	t.Run("bus down, back within the budget", func(t *testing.T) {
		w := newWorld()
		w.lifecycle.publish = publishPolicy{budget: time.Minute, wait: 100 * time.Millisecond}
		w.bus.setDown(true)
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		w.lifecycle.Publish(ctx, tokenEvent(1), tokenEvent(2))
		cancel() // the caller leaving does not stop the publication
		// The margin is for a loaded machine; the fault this catches is
		// holding the caller for the budget (a minute) or until the bus is back.
		if d := time.Since(start); d > 100*time.Millisecond+2*time.Second {
			t.Errorf("Publish held its caller %s while the bus was down", d)
		}
		waitUntil(t, "a few failed attempts", func() bool { _, n := w.bus.published(); return n >= 2 })
		w.bus.setDown(false)
		waitUntil(t, "the events are published", func() bool { evs, _ := w.bus.published(); return len(evs) == 2 })
		evs, _ := w.bus.published()
		if evs[0].Seq != 1 || evs[1].Seq != 2 {
			t.Errorf("published seqs %d, %d: order lost", evs[0].Seq, evs[1].Seq)
		}
	})
	t.Run("the default bounds", func(t *testing.T) {
		if p := New(Deps{}).publish; p.budget != PublishBudget || p.wait != PublishWait || PublishWait >= PublishBudget {
			t.Errorf("default policy %+v, want PublishBudget %s and PublishWait %s below it", p, PublishBudget, PublishWait)
		}
	})
}
