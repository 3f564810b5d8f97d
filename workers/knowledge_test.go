package workers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/knowledge"
)

func TestNewKnowledgeIndexTask(t *testing.T) {
	t.Parallel()
	good := domain.SourceRef{WorkspaceID: "ws_x", SourceID: domain.NewID(domain.PrefixSource), Generation: 3}
	tests := []struct {
		name    string
		ref     domain.SourceRef
		wantErr bool
	}{
		{"valid", good, false},
		{"no workspace", domain.SourceRef{SourceID: good.SourceID}, true},
		{"bad source id", domain.SourceRef{WorkspaceID: "ws_x", SourceID: "nope"}, true},
		{"negative generation", domain.SourceRef{WorkspaceID: "ws_x", SourceID: good.SourceID, Generation: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task, err := NewKnowledgeIndexTask(context.Background(), tt.ref)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && task.Type() != TypeKnowledgeIndex {
				t.Fatalf("type = %s", task.Type())
			}
		})
	}
}

// One workspace's index jobs run at most IndexSlotsPerWorkspace at a time,
// across the whole server, while another workspace's job is not held up;
// waiting for a slot uses up no retry.
func TestIndexJobsAreBoundedPerWorkspace(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	opt, err := asynq.ParseRedisURI(url)
	if err != nil {
		t.Fatal(err)
	}
	copts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := goredis.NewClient(copts)
	t.Cleanup(func() { _ = client.Close() })

	var mu sync.Mutex
	running := map[string]int{}
	peak := map[string]int{}
	var order []string
	done := make(chan domain.SourceRef, 10)
	indexer := indexerFunc(func(ctx context.Context, ref domain.SourceRef, lastAttempt bool) error {
		mu.Lock()
		running[ref.WorkspaceID]++
		peak[ref.WorkspaceID] = max(peak[ref.WorkspaceID], running[ref.WorkspaceID])
		order = append(order, ref.WorkspaceID)
		mu.Unlock()
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		running[ref.WorkspaceID]--
		mu.Unlock()
		done <- ref
		return nil
	})
	startServerWith(t, opt, ServerConfig{Concurrency: 6, IndexSlotsPerWorkspace: 1},
		Processors{Inbound: processorFunc(func(context.Context, string) error { return nil }), Knowledge: indexer, Slots: redisadapter.NewSlots(client), Delivery: delivererFunc(nil)})
	enq := newEnqueuer(t, opt)
	for i := range 3 {
		ref := domain.SourceRef{WorkspaceID: "ws_big", SourceID: domain.NewID(domain.PrefixSource), Generation: i}
		if err := enq.EnqueueIndexSource(t.Context(), ref); err != nil {
			t.Fatal(err)
		}
		// The same generation again is a no-op, not an error.
		if err := enq.EnqueueIndexSource(t.Context(), ref); err != nil {
			t.Fatalf("re-enqueue of a queued generation: %v", err)
		}
	}
	if err := enq.EnqueueIndexSource(t.Context(), domain.SourceRef{WorkspaceID: "ws_small", SourceID: domain.NewID(domain.PrefixSource)}); err != nil {
		t.Fatal(err)
	}
	var smallDone bool
	bigDone := 0
	deadline := time.After(30 * time.Second)
	for bigDone < 3 || !smallDone {
		select {
		case ref := <-done:
			if ref.WorkspaceID == "ws_small" {
				smallDone = true
				if bigDone == 3 {
					t.Error("the small workspace's job waited for all of the big one's")
				}
			} else {
				bigDone++
			}
		case <-deadline:
			t.Fatalf("jobs done: big %d, small %v", bigDone, smallDone)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak["ws_big"] != 1 {
		t.Fatalf("ws_big ran %d jobs at once, want 1 (order %v)", peak["ws_big"], order)
	}
}

// Index jobs run in slots of their own: with every index slot held by a
// crawl that does not end, inbound messages are still processed, and while
// the crawls are still blocked. (In one shared pool, as before, the crawls
// held every slot and the message waited for them.)
func TestIndexingNeverTakesTheSlotsOfInboundMessages(t *testing.T) {
	t.Parallel()
	opt := redisOpt(t)
	unblock := make(chan struct{})
	var mu sync.Mutex
	running := 0
	indexer := indexerFunc(func(ctx context.Context, ref domain.SourceRef, _ bool) error {
		mu.Lock()
		running++
		mu.Unlock()
		select {
		case <-unblock:
		case <-ctx.Done():
		}
		return nil
	})
	processed := make(chan int, 1)
	inbound := processorFunc(func(context.Context, string) error {
		mu.Lock()
		processed <- running
		mu.Unlock()
		return nil
	})
	startServerWith(t, opt, ServerConfig{Concurrency: 2, IndexConcurrency: 2, IndexSlotsPerWorkspace: 5},
		Processors{Inbound: inbound, Knowledge: indexer, Slots: unboundedSlots{}, Delivery: delivererFunc(nil)})
	t.Cleanup(func() { close(unblock) })
	enq := newEnqueuer(t, opt)
	for i := range 4 {
		ref := domain.SourceRef{WorkspaceID: fmt.Sprintf("ws_%d", i), SourceID: domain.NewID(domain.PrefixSource)}
		if err := enq.EnqueueIndexSource(t.Context(), ref); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "two crawls running", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return running == 2
	})
	if err := enq.EnqueueInboundEvent(t.Context(), domain.NewID(domain.PrefixInboundEvent)); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-processed:
		if n != 2 {
			t.Fatalf("the message was processed with %d crawls running, want it processed while both still block", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the inbound message was not processed while the index jobs held their slots")
	}
	mu.Lock()
	defer mu.Unlock()
	if running != 2 {
		t.Fatalf("%d index jobs ran, want 2: the other two wait for an index slot", running)
	}
}

// A crawl that used its time for this attempt comes back at once to
// continue, and that uses up no retry, and nothing is logged as a failure.
func TestContinuingCrawlIsNoFailure(t *testing.T) {
	t.Parallel()
	opt := redisOpt(t)
	attempts := make(chan int, 10)
	var calls int
	indexer := indexerFunc(func(ctx context.Context, ref domain.SourceRef, _ bool) error {
		retried, _ := asynq.GetRetryCount(ctx)
		attempts <- retried
		if calls++; calls < 3 {
			return fmt.Errorf("source %s: %w", ref.SourceID, knowledge.ErrCrawlContinues)
		}
		return nil
	})
	_, logs := startServerWith(t, opt, ServerConfig{},
		Processors{Inbound: processorFunc(func(context.Context, string) error { return nil }), Knowledge: indexer, Slots: unboundedSlots{}, Delivery: delivererFunc(nil)})
	task, err := NewKnowledgeIndexTask(context.Background(), domain.SourceRef{WorkspaceID: "ws_x", SourceID: domain.NewID(domain.PrefixSource)})
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	info, err := client.EnqueueContext(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		select {
		case retried := <-attempts:
			if retried != 0 {
				t.Fatalf("attempt %d: %d retries used, want 0", i+1, retried)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("attempt %d never came", i+1)
		}
	}
	in := newInspector(t, opt)
	eventually(t, "the task to finish", func() bool {
		_, err := in.GetTaskInfo(QueueKnowledge, info.ID)
		return errors.Is(err, asynq.ErrTaskNotFound)
	})
	if archived, _ := in.ListArchivedTasks(QueueKnowledge); len(archived) != 0 {
		t.Fatalf("%d archived tasks", len(archived))
	}
	if strings.Contains(logs.String(), "task failed") {
		t.Fatalf("a continuation was logged as a failure:\n%s", logs.String())
	}
}

// busySlots says the workspace is busy the first `busy` times it is asked.
type busySlots struct {
	mu   sync.Mutex
	busy int
	asks int
}

func (b *busySlots) TryAcquire(context.Context, string, int, time.Duration) (func(), bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asks++
	return func() {}, b.asks > b.busy, nil
}

// A job on its last attempt that finds its workspace's slots busy waits for
// one rather than going back to the queue: with no retry left, asynq would
// archive it, and the archived task's id would block the sweeper from ever
// enqueueing the source again.
func TestLastAttemptWaitsForItsWorkspaceSlot(t *testing.T) {
	t.Parallel()
	opt := redisOpt(t)
	ran := make(chan bool, 1)
	indexer := indexerFunc(func(_ context.Context, _ domain.SourceRef, last bool) error {
		ran <- last
		return nil
	})
	slots := &busySlots{busy: 2}
	startServerWith(t, opt, ServerConfig{},
		Processors{Inbound: processorFunc(func(context.Context, string) error { return nil }), Knowledge: indexer, Slots: slots, Delivery: delivererFunc(nil)})
	task, err := NewKnowledgeIndexTask(context.Background(), domain.SourceRef{WorkspaceID: "ws_x", SourceID: domain.NewID(domain.PrefixSource)})
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	if _, err := client.EnqueueContext(t.Context(), task, asynq.MaxRetry(0)); err != nil {
		t.Fatal(err)
	}
	select {
	case last := <-ran:
		if !last {
			t.Error("the index job was not told it runs its last attempt")
		}
	case <-time.After(30 * time.Second):
		archived, _ := newInspector(t, opt).ListArchivedTasks(QueueKnowledge)
		t.Fatalf("the job never ran; %d archived tasks", len(archived))
	}
}
