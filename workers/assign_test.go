package workers

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/core/domain"
)

// assignerFunc adapts a function to AutoAssigner, recording its calls.
type assignerFunc struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (a *assignerFunc) AutoAssign(_ context.Context, workspaceID, conversationID string) (domain.Conversation, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, workspaceID+"/"+conversationID)
	return domain.Conversation{ID: conversationID, AssigneeID: "usr_x"}, a.err == nil, a.err
}

func (a *assignerFunc) called() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func TestNewConversationAssignTask(t *testing.T) {
	t.Parallel()
	if _, err := NewConversationAssignTask(context.Background(), "", "ses_x"); err == nil {
		t.Error("a task without a workspace was made")
	}
	task, err := NewConversationAssignTask(context.Background(), "ws_a", "ses_b")
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(redisOpt(t))
	t.Cleanup(func() { _ = client.Close() })
	info, err := client.EnqueueContext(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != TypeConversationAssign || info.Queue != QueueInbound || info.MaxRetry != assignMaxRetry || info.Timeout != assignTimeout ||
		string(info.Payload) != `{"workspaceId":"ws_a","conversationId":"ses_b"}` {
		t.Errorf("enqueued %s on %q, MaxRetry %d, Timeout %v, payload %s", info.Type, info.Queue, info.MaxRetry, info.Timeout, info.Payload)
	}
}

// An enqueued auto-assignment reaches the assigner; a malformed payload or
// a permanent error is not retried, a transient one is.
func TestConversationAssignTasks(t *testing.T) {
	t.Parallel()
	ws, conv := domain.NewID(domain.PrefixWorkspace), domain.NewID(domain.PrefixSession)
	opt := redisOpt(t)
	assigner := &assignerFunc{}
	startServerWith(t, opt, ServerConfig{}, Processors{
		Inbound: processorFunc(func(context.Context, string) error { return nil }), Knowledge: indexerFunc(func(context.Context, domain.SourceRef, bool) error { return nil }),
		Slots: unboundedSlots{}, Delivery: delivererFunc(nil), AutoAssign: assigner,
	})
	enq := newEnqueuer(t, opt)
	if err := enq.EnqueueAutoAssign(t.Context(), ws, conv); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the assignment ran", func() bool { return len(assigner.called()) == 1 })
	if got := assigner.called()[0]; got != ws+"/"+conv {
		t.Fatalf("assigned %s, want %s/%s", got, ws, conv)
	}

	s := &Server{autoAssign: assigner}
	for _, tt := range []struct {
		name      string
		payload   string
		err       error
		permanent bool
	}{
		{"malformed payload", `{"workspaceId":`, nil, true},
		{"not a session id", `{"workspaceId":"ws_a","conversationId":"conv_1"}`, nil, true},
		{"an unknown conversation", `{"workspaceId":"ws_a","conversationId":"` + conv + `"}`, domain.NotFound("conversation"), true},
		{"the database down", `{"workspaceId":"ws_a","conversationId":"` + conv + `"}`, domain.Unavailable("db", errors.New("down")), false},
	} {
		assigner.err = tt.err
		err := s.handleConversationAssign(t.Context(), asynq.NewTask(TypeConversationAssign, []byte(tt.payload)))
		if err == nil || errors.Is(err, asynq.SkipRetry) != tt.permanent {
			t.Errorf("%s: %v, want permanent %v", tt.name, err, tt.permanent)
		}
	}
}
