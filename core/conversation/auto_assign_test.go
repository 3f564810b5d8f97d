package conversation

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// autoAssignQueue records the conversations whose auto-assignment was
// scheduled, failing with err.
type autoAssignQueue struct {
	mu  sync.Mutex
	got []string
	err error
}

func (q *autoAssignQueue) EnqueueAutoAssign(_ context.Context, workspaceID, conversationID string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.got = append(q.got, workspaceID+"/"+conversationID)
	return q.err
}

// A move to HANDOFF_REQUESTED schedules the conversation's auto-assignment
// when its workspace has it on, and only then; a queue that cannot be
// reached fails nothing: the handoff is stored.
func TestMoveSchedulesAutoAssignment(t *testing.T) {
	tests := []struct {
		name     string
		on       bool
		from     domain.ConversationStatus
		to       domain.ConversationStatus
		assignee string
		queueErr error
		want     bool
	}{
		{"handoff, auto-assignment on", true, domain.StatusAI, domain.StatusHandoffRequested, "", nil, true},
		{"handoff, the queue down", true, domain.StatusAI, domain.StatusHandoffRequested, "", domain.Unavailable("queue", errors.New("down")), true},
		{"handoff, auto-assignment off", false, domain.StatusAI, domain.StatusHandoffRequested, "", nil, false},
		{"handoff of an assigned conversation", true, domain.StatusResolved, domain.StatusHandoffRequested, domain.NewID(domain.PrefixUser), nil, false},
		{"another move", true, domain.StatusAI, domain.StatusResolved, "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			q := &autoAssignQueue{err: tt.queueErr}
			w.ws.AutoAssign = tt.on
			w.lifecycle = New(Deps{
				Conversations: w.store, Workspaces: w.workspaces, Agents: w.agentsByID, Deliveries: w.queue, Bus: w.bus,
				AutoAssign: q, Clock: fixedClock{testNow}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			conv := w.session(w.agent, tt.from, "")
			if tt.assignee != "" {
				conv.AssigneeID = tt.assignee
				w.store.Put(conv)
			}
			moved, err := w.lifecycle.Move(t.Context(), &w.ws, conv, Move{To: tt.to})
			if err != nil || moved.Conversation.Status != tt.to {
				t.Fatalf("Move: %+v, %v", moved.Conversation, err)
			}
			want := []string(nil)
			if tt.want {
				want = []string{w.ws.ID + "/" + conv.ID}
			}
			if len(q.got) != len(want) || (len(want) == 1 && q.got[0] != want[0]) {
				t.Fatalf("scheduled %v, want %v", q.got, want)
			}
		})
	}
}
