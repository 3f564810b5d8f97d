package workers

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
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
			task, err := NewKnowledgeIndexTask(tt.ref)
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
