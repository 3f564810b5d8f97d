package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

// processorFunc adapts a function to InboundProcessor.
type processorFunc func(ctx context.Context, eventID string) error

func (f processorFunc) ProcessInboundEvent(ctx context.Context, eventID string) error {
	return f(ctx, eventID)
}

// redisOpt gives the test its own Redis database, which asynq uses for all its keys.
func redisOpt(t *testing.T) asynq.RedisConnOpt {
	t.Helper()
	opt, err := asynq.ParseRedisURI(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// startServer starts a worker server and shuts it down at cleanup, before
// redistest flushes the database (cleanups run last registered, first).
func startServer(t *testing.T, opt asynq.RedisConnOpt, cfg ServerConfig, proc InboundProcessor) (*Server, *logBuffer) {
	t.Helper()
	return startServerWith(t, opt, cfg, Processors{Inbound: proc, Knowledge: indexerFunc(func(context.Context, domain.SourceRef, bool) error { return nil }), Slots: unboundedSlots{}, Delivery: delivererFunc(nil)})
}

// indexerFunc adapts a function to KnowledgeIndexer.
type indexerFunc func(ctx context.Context, ref domain.SourceRef, lastAttempt bool) error

func (f indexerFunc) Index(ctx context.Context, ref domain.SourceRef, lastAttempt bool) error {
	return f(ctx, ref, lastAttempt)
}

// unboundedSlots always grants a slot, for tests about other tasks.
type unboundedSlots struct{}

func (unboundedSlots) TryAcquire(context.Context, string, int, time.Duration) (func(), bool, error) {
	return func() {}, true, nil
}

func startServerWith(t *testing.T, opt asynq.RedisConnOpt, cfg ServerConfig, procs Processors) (*Server, *logBuffer) {
	t.Helper()
	logger, logs := newTestLogger()
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 2 * time.Second
	}
	srv := NewServer(opt, cfg, procs, logger)
	if err := srv.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv, logs
}

func newEnqueuer(t *testing.T, opt asynq.RedisConnOpt) *Enqueuer {
	t.Helper()
	e := NewEnqueuer(opt)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func newInspector(t *testing.T, opt asynq.RedisConnOpt) *asynq.Inspector {
	t.Helper()
	in := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = in.Close() })
	return in
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// onlyTask waits until list returns exactly one task, and returns it.
func onlyTask(t *testing.T, what string, list func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error)) *asynq.TaskInfo {
	t.Helper()
	var task *asynq.TaskInfo
	eventually(t, what, func() bool {
		tasks, err := list(QueueInbound)
		if err != nil || len(tasks) != 1 {
			return false // the queue does not exist until the first enqueue
		}
		task = tasks[0]
		return true
	})
	return task
}

// recorder is a processor that records the ids it was called with.
type recorder struct {
	mu    sync.Mutex
	ids   []string
	reply func(call int) error
}

func (r *recorder) ProcessInboundEvent(_ context.Context, eventID string) error {
	r.mu.Lock()
	r.ids = append(r.ids, eventID)
	call := len(r.ids)
	r.mu.Unlock()
	if r.reply == nil {
		return nil
	}
	return r.reply(call)
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

func TestNewInboundProcessTask(t *testing.T) {
	t.Parallel()
	if _, err := NewInboundProcessTask(context.Background(), ""); err == nil {
		t.Error("NewInboundProcessTask(\"\") succeeded")
	}

	id := domain.NewID(domain.PrefixInboundEvent)
	task, err := NewInboundProcessTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(redisOpt(t))
	t.Cleanup(func() { _ = client.Close() })
	info, err := client.EnqueueContext(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != "inbound:process" || info.Queue != "inbound" || info.MaxRetry != 20 || info.Timeout != 30*time.Second {
		t.Errorf("enqueued %s on %q with MaxRetry %d, Timeout %v; want inbound:process on \"inbound\", 20, 30s",
			info.Type, info.Queue, info.MaxRetry, info.Timeout)
	}
	if got, want := string(info.Payload), `{"eventId":"`+id+`"}`; got != want {
		t.Errorf("payload = %s, want %s", got, want)
	}
}

func TestEnqueuedEventsReachTheProcessor(t *testing.T) {
	t.Parallel()
	opt := redisOpt(t)
	rec := &recorder{}
	startServer(t, opt, ServerConfig{}, rec)
	enq := newEnqueuer(t, opt)

	want := []string{domain.NewID(domain.PrefixInboundEvent), domain.NewID(domain.PrefixInboundEvent), domain.NewID(domain.PrefixInboundEvent)}
	begin := time.Now()
	for _, id := range want {
		if err := enq.EnqueueInboundEvent(t.Context(), id); err != nil {
			t.Fatalf("EnqueueInboundEvent: %v", err)
		}
	}
	eventually(t, "three processed events", func() bool { return len(rec.calls()) == 3 })
	t.Logf("three tasks enqueued and processed in %v", time.Since(begin))
	got := rec.calls()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("processed %v, want %v", got, want)
	}
}

func TestPermanentFailuresAreArchivedWithoutRetry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload func(id string) []byte
		err     error
		calls   int
		lastErr string
	}{
		{
			name:  "event not found",
			err:   fmt.Errorf("load event: %w", domain.NotFound("inbound event")),
			calls: 1, lastErr: "inbound event not found",
		},
		{
			name:  "invalid input",
			err:   domain.Invalid("message is required"),
			calls: 1, lastErr: "message is required",
		},
		{
			name:    "malformed payload",
			payload: func(string) []byte { return []byte("not json") },
			calls:   0, lastErr: "malformed payload",
		},
		{
			name:    "payload without a valid event id",
			payload: func(string) []byte { return []byte(`{"eventId":"../../etc"}`) },
			calls:   0, lastErr: "no valid event id",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opt := redisOpt(t)
			rec := &recorder{reply: func(int) error { return tt.err }}
			_, logs := startServer(t, opt, ServerConfig{}, rec)
			id := domain.NewID(domain.PrefixInboundEvent)
			if tt.payload == nil {
				if err := newEnqueuer(t, opt).EnqueueInboundEvent(t.Context(), id); err != nil {
					t.Fatal(err)
				}
			} else {
				client := asynq.NewClient(opt)
				t.Cleanup(func() { _ = client.Close() })
				raw := asynq.NewTask(TypeInboundProcess, tt.payload(id), asynq.Queue(QueueInbound), asynq.MaxRetry(20))
				if _, err := client.EnqueueContext(t.Context(), raw); err != nil {
					t.Fatal(err)
				}
			}

			in := newInspector(t, opt)
			archived := onlyTask(t, "the archived task", in.ListArchivedTasks)
			if archived.Retried != 0 || !strings.Contains(archived.LastErr, tt.lastErr) {
				t.Errorf("archived after %d retries with %q; want 0 retries and an error containing %q", archived.Retried, archived.LastErr, tt.lastErr)
			}
			if n := len(rec.calls()); n != tt.calls {
				t.Errorf("processor called %d times, want %d", n, tt.calls)
			}
			if retries, _ := in.ListRetryTasks(QueueInbound); len(retries) != 0 {
				t.Errorf("%d tasks scheduled for retry, want none", len(retries))
			}

			eventually(t, "the error log", func() bool { return strings.Contains(logs.String(), "archived") })
			var rec2 map[string]any
			for line := range strings.Lines(logs.String()) {
				if strings.Contains(line, "failed permanently") {
					if err := json.Unmarshal([]byte(line), &rec2); err != nil {
						t.Fatal(err)
					}
				}
			}
			if rec2 == nil {
				t.Fatalf("no 'failed permanently' log line in:\n%s", logs.String())
			}
			if rec2["level"] != "ERROR" || rec2["taskType"] != TypeInboundProcess || rec2["retried"] != float64(0) {
				t.Errorf("log record %v lacks level ERROR, taskType or retried 0", rec2)
			}
			if tt.payload == nil && rec2["eventId"] != id {
				t.Errorf("log record eventId = %v, want %s", rec2["eventId"], id)
			}
			if strings.Contains(logs.String(), "not json") || strings.Contains(logs.String(), "../../etc") {
				t.Errorf("the raw payload was logged:\n%s", logs.String())
			}
		})
	}
}

func TestTransientFailuresAreRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
	}{
		{name: "unavailable", err: domain.Unavailable("postgres", errors.New("connection refused"))},
		{name: "unknown error", err: errors.New("something odd")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opt := redisOpt(t)
			// The first attempt fails, the second succeeds.
			rec := &recorder{reply: func(call int) error {
				if call == 1 {
					return tt.err
				}
				return nil
			}}
			_, logs := startServer(t, opt, ServerConfig{}, rec)
			id := domain.NewID(domain.PrefixInboundEvent)
			if err := newEnqueuer(t, opt).EnqueueInboundEvent(t.Context(), id); err != nil {
				t.Fatal(err)
			}

			in := newInspector(t, opt)
			retry := onlyTask(t, "the task scheduled for retry", in.ListRetryTasks)
			if retry.Retried != 1 || !strings.Contains(retry.LastErr, tt.err.Error()) {
				t.Errorf("retry task: Retried %d, LastErr %q; want 1 and %q", retry.Retried, retry.LastErr, tt.err)
			}
			// RetryDelay puts the first retry 0.5 to 1 s out.
			if wait := time.Until(retry.NextProcessAt); wait > time.Second {
				t.Errorf("first retry scheduled in %v, want at most 1s", wait)
			}
			if !strings.Contains(logs.String(), `"level":"WARN","msg":"task failed; will retry"`) {
				t.Errorf("no warning logged for the retry:\n%s", logs.String())
			}

			eventually(t, "the second attempt", func() bool { return len(rec.calls()) == 2 })
			if got := rec.calls(); got[0] != id || got[1] != id {
				t.Errorf("attempts with ids %v, want %s twice", got, id)
			}
			eventually(t, "the retry set to empty", func() bool {
				tasks, err := in.ListRetryTasks(QueueInbound)
				return err == nil && len(tasks) == 0
			})
			if archived, _ := in.ListArchivedTasks(QueueInbound); len(archived) != 0 {
				t.Errorf("%d archived tasks, want none", len(archived))
			}
		})
	}
}

func TestShutdownWaitsForInFlightTask(t *testing.T) {
	t.Parallel()
	opt := redisOpt(t)
	started := make(chan struct{})
	release := make(chan struct{})
	finished := make(chan error, 1)
	proc := processorFunc(func(ctx context.Context, _ string) error {
		close(started)
		select {
		case <-release:
			finished <- nil
		case <-ctx.Done():
			finished <- ctx.Err()
		}
		return nil
	})
	srv, _ := startServer(t, opt, ServerConfig{ShutdownTimeout: 10 * time.Second}, proc)
	if err := newEnqueuer(t, opt).EnqueueInboundEvent(t.Context(), domain.NewID(domain.PrefixInboundEvent)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("task never started")
	}

	shutdownDone := make(chan struct{})
	go func() {
		defer close(shutdownDone)
		srv.Shutdown()
	}()
	select {
	case <-shutdownDone:
		t.Fatal("Shutdown returned while a task was still running")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case <-shutdownDone:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after the task finished")
	}
	if err := <-finished; err != nil {
		t.Errorf("the in-flight task was interrupted: %v", err)
	}
}

// A task still running when ShutdownTimeout ends goes back to its queue, so
// another worker runs it: nothing is lost on a slow shutdown.
func TestShutdownTimeoutRequeuesTask(t *testing.T) {
	t.Parallel()
	opt := redisOpt(t)
	started := make(chan struct{})
	proc := processorFunc(func(ctx context.Context, _ string) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	srv, _ := startServer(t, opt, ServerConfig{ShutdownTimeout: 200 * time.Millisecond}, proc)
	if err := newEnqueuer(t, opt).EnqueueInboundEvent(t.Context(), domain.NewID(domain.PrefixInboundEvent)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("task never started")
	}
	srv.Shutdown()

	in := newInspector(t, opt)
	pending := onlyTask(t, "the requeued task", in.ListPendingTasks)
	if pending.Type != TypeInboundProcess {
		t.Errorf("pending task type %q", pending.Type)
	}
}

func TestEnqueueWithRedisDownIsUnavailable(t *testing.T) {
	t.Parallel()
	enq := newEnqueuer(t, asynq.RedisClientOpt{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	err := enq.EnqueueInboundEvent(ctx, domain.NewID(domain.PrefixInboundEvent))
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}
