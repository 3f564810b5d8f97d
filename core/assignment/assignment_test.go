package assignment_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/memory"
	"github.com/conciergehq/concierge/core/assignment"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// The PostgreSQL store, and the take-over race, are tested against the
// real database in adapters/postgres; here the use cases run on the
// in-memory conversation store (the lifecycle's moves) and a recording
// assignment store (claims and assignments).

// recordingStore records the change it was asked for and answers with err,
// or with the conversation changed and the deliveries change.Report builds.
type recordingStore struct {
	got   *domain.AssigneeChange
	err   error
	calls int
	// candidates are what an auto-assignment's Choose is given.
	candidates []domain.AssignCandidate
}

func (r *recordingStore) ChangeAssignee(_ context.Context, c domain.AssigneeChange) (domain.Conversation, []domain.Delivery, error) {
	r.calls++
	r.got = &c
	if r.err != nil {
		return domain.Conversation{}, nil, r.err
	}
	after := domain.Conversation{ID: c.ConversationID, WorkspaceID: c.WorkspaceID, AssigneeID: c.AssigneeID, Status: domain.StatusHuman}
	if c.Choose != nil {
		after.Status, after.AssigneeID = domain.StatusHandoffRequested, c.Choose(r.candidates)
		if after.AssigneeID == "" {
			return after, nil, nil
		}
	}
	var ds []domain.Delivery
	if c.Report != nil {
		ds = c.Report(after)
	}
	return after, ds, nil
}

type recordingBus struct {
	mu     sync.Mutex
	events []domain.SessionEvent
}

func (b *recordingBus) Publish(_ context.Context, events ...domain.SessionEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, events...)
	return nil
}

type recordingQueue struct {
	mu    sync.Mutex
	types []string
}

func (q *recordingQueue) EnqueueDelivery(_ context.Context, d domain.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.types = append(q.types, d.Type)
	return nil
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

type rig struct {
	svc   *assignment.Service
	convs *memory.Conversations
	store *recordingStore
	bus   *recordingBus
	queue *recordingQueue
	ws    *domain.Workspace
	agent domain.Agent
	now   time.Time
}

func newRig(t *testing.T, plan domain.Plan) *rig {
	t.Helper()
	return newRigWith(t, plan, false)
}

// newRigWith is newRig with the workspace's auto-assignment on or off.
func newRigWith(t *testing.T, plan domain.Plan, autoAssign bool) *rig {
	t.Helper()
	r := &rig{
		convs: memory.NewConversations(), store: &recordingStore{}, bus: &recordingBus{}, queue: &recordingQueue{},
		ws:  &domain.Workspace{ID: domain.NewID(domain.PrefixWorkspace), Plan: plan, EventsURL: "https://hooks.example/e", AutoAssign: autoAssign},
		now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
	}
	r.agent = domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: r.ws.ID, Slug: "support"}
	lifecycle := conversation.New(conversation.Deps{
		Conversations: r.convs, Deliveries: r.queue, Bus: r.bus, Clock: fixedClock{r.now},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	r.svc = assignment.NewService(assignment.Deps{
		Assignments: r.store, Conversations: r.convs, Lifecycle: lifecycle, Workspaces: workspaces{ws: *r.ws}, Clock: fixedClock{r.now},
	})
	return r
}

// conv stores a conversation in status, held by assignee ("" nobody).
func (r *rig) conv(status domain.ConversationStatus, assignee string) string {
	c := domain.NewConversation(r.ws.ID, &r.agent, "", r.now)
	c.Status, c.AssigneeID = status, assignee
	r.convs.Put(c)
	return c.ID
}

func member(ws string, name string) domain.Member {
	return domain.Member{WorkspaceID: ws, UserID: domain.NewID(domain.PrefixUser), Name: name, Role: domain.MemberAgent}
}

func TestTakeOver(t *testing.T) {
	tests := []struct {
		name     string
		status   domain.ConversationStatus
		holder   string // "ada", "bob" or ""
		wantErr  error
		wantHeld string // the holder a conflict names
		// wantNotice: the move wrote and published "Ada joined the conversation.".
		wantNotice bool
		// wantClaim: the conversation was HUMAN and the claim went to the store.
		wantClaim bool
		// wantAssigned: conversation.assigned was written and scheduled.
		wantAssigned bool
	}{
		{name: "from AI", status: domain.StatusAI, wantNotice: true, wantAssigned: true},
		{name: "a handoff request", status: domain.StatusHandoffRequested, wantNotice: true, wantAssigned: true},
		{name: "a resolved case reopens", status: domain.StatusResolved, wantNotice: true, wantAssigned: true},
		{name: "a resolved case Bob held reopens for Ada", status: domain.StatusResolved, holder: "bob", wantNotice: true, wantAssigned: true},
		{name: "an AI conversation assigned to Ada moves without a new assignee", status: domain.StatusAI, holder: "ada", wantNotice: true},
		{name: "an unassigned HUMAN conversation is claimed", status: domain.StatusHuman, wantClaim: true, wantAssigned: true},
		{name: "held by Bob", status: domain.StatusHuman, holder: "bob", wantErr: domain.ErrConflict, wantHeld: "bob"},
		{name: "an AI conversation held by Bob", status: domain.StatusAI, holder: "bob", wantErr: domain.ErrConflict, wantHeld: "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, domain.PlanStandard)
			ada, bob := member(r.ws.ID, "Ada"), member(r.ws.ID, "Bob")
			ids := map[string]string{"ada": ada.UserID, "bob": bob.UserID}
			id := r.conv(tt.status, ids[tt.holder])
			got, err := r.svc.TakeOver(t.Context(), r.ws, id, ada)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			var c *domain.ConflictError
			if tt.wantHeld != "" && (!errors.As(err, &c) || c.Details["assigneeId"] != ids[tt.wantHeld]) {
				t.Fatalf("err %v, want a conflict naming %s", err, tt.wantHeld)
			}
			if tt.wantErr == nil && (got.Status != domain.StatusHuman || got.AssigneeID != ada.UserID) {
				t.Fatalf("returned %s %q, want HUMAN held by Ada", got.Status, got.AssigneeID)
			}
			msgs := r.convs.Messages(id)
			if tt.wantNotice != (len(msgs) == 1 && msgs[0].Content == "Ada joined the conversation." && msgs[0].Status == domain.StatusHuman) {
				t.Fatalf("messages %+v, want the notice %v", msgs, tt.wantNotice)
			}
			if tt.wantNotice {
				if len(r.bus.events) != 1 || r.bus.events[0].Type != domain.EventStatus || r.bus.events[0].MessageID != msgs[0].ID {
					t.Fatalf("published %+v, want the notice's status event", r.bus.events)
				}
				if stored, _ := r.convs.Conversation(id); stored.AssigneeID != ada.UserID || stored.Status != domain.StatusHuman {
					t.Fatalf("stored %s %q", stored.Status, stored.AssigneeID)
				}
			} else if len(r.bus.events) != 0 {
				t.Fatalf("published %+v", r.bus.events)
			}
			if claimed := r.store.calls == 1 && r.store.got.TakeOver && r.store.got.AssigneeID == ada.UserID; claimed != tt.wantClaim {
				t.Fatalf("claim %+v (%d calls), want %v", r.store.got, r.store.calls, tt.wantClaim)
			}
			assigned := 0
			for _, typ := range r.queue.types {
				if typ == domain.EventConversationAssigned {
					assigned++
				}
			}
			if tt.wantAssigned != (assigned == 1) || assigned > 1 {
				t.Fatalf("scheduled %v, want conversation.assigned %v", r.queue.types, tt.wantAssigned)
			}
		})
	}
}

func TestTakeOverRefusals(t *testing.T) {
	r := newRig(t, domain.PlanStandard)
	ada := member(r.ws.ID, "Ada")
	outsider := member(domain.NewID(domain.PrefixWorkspace), "Eve")
	id := r.conv(domain.StatusAI, "")
	if _, err := r.svc.TakeOver(t.Context(), r.ws, id, outsider); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("outsider: %v", err)
	}
	if _, err := r.svc.TakeOver(t.Context(), r.ws, "ses_x", ada); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("malformed id: %v", err)
	}
	if _, err := r.svc.TakeOver(t.Context(), r.ws, domain.NewID(domain.PrefixSession), ada); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	hobby := newRig(t, domain.PlanHobby)
	var plan *domain.PlanError
	if _, err := hobby.svc.TakeOver(t.Context(), hobby.ws, hobby.conv(domain.StatusAI, ""), member(hobby.ws.ID, "Ada")); !errors.As(err, &plan) {
		t.Fatalf("hobby: %v, want a plan error", err)
	}
	if msgs := r.convs.Messages(id); len(msgs) != 0 || r.store.calls != 0 {
		t.Fatalf("a refusal wrote %+v (%d store calls)", msgs, r.store.calls)
	}
}

func TestAssignAndUnassign(t *testing.T) {
	conv := domain.NewID(domain.PrefixSession)
	user := domain.NewID(domain.PrefixUser)
	tests := []struct {
		name      string
		events    bool
		run       func(*rig, domain.Member) (domain.Conversation, error)
		storeErr  error
		wantErr   error
		wantField string
		want      *domain.AssigneeChange // nil: the store is not called
	}{
		{"assign by an API key", true, func(r *rig, _ domain.Member) (domain.Conversation, error) {
			return r.svc.Assign(t.Context(), r.ws, conv, user, nil)
		}, nil, nil, "", &domain.AssigneeChange{ConversationID: conv, AssigneeID: user}},
		{"assign by a member, no events URL", false, func(r *rig, m domain.Member) (domain.Conversation, error) {
			return r.svc.Assign(t.Context(), r.ws, conv, user, &m)
		}, nil, nil, "", &domain.AssigneeChange{ConversationID: conv, AssigneeID: user}},
		{"assign a malformed user id", true, func(r *rig, m domain.Member) (domain.Conversation, error) {
			return r.svc.Assign(t.Context(), r.ws, conv, "bob", &m)
		}, nil, domain.ErrInvalidInput, "assigneeId", nil},
		{"assign a malformed conversation id", true, func(r *rig, m domain.Member) (domain.Conversation, error) {
			return r.svc.Assign(t.Context(), r.ws, "ses_x", user, &m)
		}, nil, domain.ErrNotFound, "", nil},
		{"assign by another workspace's member", true, func(r *rig, _ domain.Member) (domain.Conversation, error) {
			eve := member(domain.NewID(domain.PrefixWorkspace), "Eve")
			return r.svc.Assign(t.Context(), r.ws, conv, user, &eve)
		}, nil, domain.ErrForbidden, "", nil},
		{"assign a non-member", true, func(r *rig, _ domain.Member) (domain.Conversation, error) {
			return r.svc.Assign(t.Context(), r.ws, conv, user, nil)
		}, domain.InvalidField("assigneeId", "is not a member of this workspace"), domain.ErrInvalidInput, "assigneeId", &domain.AssigneeChange{ConversationID: conv, AssigneeID: user}},
		{"unassign", true, func(r *rig, m domain.Member) (domain.Conversation, error) {
			return r.svc.Unassign(t.Context(), r.ws, conv, &m)
		}, nil, nil, "", &domain.AssigneeChange{ConversationID: conv}},
		{"unassign a malformed id", true, func(r *rig, _ domain.Member) (domain.Conversation, error) {
			return r.svc.Unassign(t.Context(), r.ws, "nope", nil)
		}, nil, domain.ErrNotFound, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, domain.PlanStandard)
			if !tt.events {
				r.ws.EventsURL = ""
			}
			r.store.err = tt.storeErr
			_, err := tt.run(r, member(r.ws.ID, "Ada"))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			var v *domain.ValidationError
			if tt.wantField != "" && (!errors.As(err, &v) || v.Fields[tt.wantField] == "") {
				t.Fatalf("err %v, want a validation error on %s", err, tt.wantField)
			}
			if tt.want == nil {
				if r.store.calls != 0 {
					t.Fatalf("store called with %+v", r.store.got)
				}
				return
			}
			got := r.store.got
			if got == nil || got.WorkspaceID != r.ws.ID || got.ConversationID != tt.want.ConversationID || got.AssigneeID != tt.want.AssigneeID || got.TakeOver {
				t.Fatalf("store got %+v, want %+v", got, tt.want)
			}
			if tt.wantErr != nil {
				return
			}
			want := []string(nil)
			if tt.events {
				want = []string{domain.EventConversationAssigned}
			}
			if len(r.queue.types) != len(want) || (len(want) == 1 && r.queue.types[0] != want[0]) {
				t.Fatalf("scheduled %v, want %v", r.queue.types, want)
			}
		})
	}
}
