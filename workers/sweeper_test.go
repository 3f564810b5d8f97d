package workers

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// requeuerFunc adapts a function to StaleRequeuer.
type requeuerFunc func(ctx context.Context) (int, error)

func (f requeuerFunc) RequeueStale(ctx context.Context) (int, error) { return f(ctx) }

// logBuffer collects JSON log lines from concurrent goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newTestLogger() (*slog.Logger, *logBuffer) {
	buf := &logBuffer{}
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// runSweeper runs s until the returned stop is called, and reports whether Run returned.
func runSweeper(t *testing.T, s *Sweeper) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
}

func TestSweeperRunsEveryIntervalAndKeepsGoingAfterErrors(t *testing.T) {
	t.Parallel()
	logger, logs := newTestLogger()
	calls := make(chan int, 100)
	var (
		mu sync.Mutex
		n  int
	)
	requeuer := requeuerFunc(func(context.Context) (int, error) {
		mu.Lock()
		n++
		call := n
		mu.Unlock()
		calls <- call
		switch call {
		case 1:
			return 2, nil
		case 2:
			return 0, errors.New("postgres: connection refused")
		default:
			return 0, nil
		}
	})
	stop := runSweeper(t, NewSweeper("inbound events", requeuer, 10*time.Millisecond, logger))
	for want := 1; want <= 4; want++ {
		select {
		case got := <-calls:
			if got != want {
				t.Fatalf("call %d, want %d", got, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("sweep %d did not happen", want)
		}
	}
	stop()

	out := logs.String()
	for _, want := range []string{
		`"msg":"requeued stale inbound events","component":"sweeper","count":2`,
		`"level":"WARN","msg":"sweep failed","component":"sweeper","error":"postgres: connection refused"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s\nlogs:\n%s", want, out)
		}
	}
}

func TestSweeperSweepsAtStartAndStopsQuietly(t *testing.T) {
	t.Parallel()
	logger, logs := newTestLogger()
	started := make(chan struct{}, 1)
	// The first sweep hangs until shutdown, like a query interrupted by SIGTERM.
	requeuer := requeuerFunc(func(ctx context.Context) (int, error) {
		started <- struct{}{}
		<-ctx.Done()
		return 0, ctx.Err()
	})
	stop := runSweeper(t, NewSweeper("inbound events", requeuer, time.Hour, logger))
	select {
	case <-started:
	case <-time.After(2 * time.Second):
		t.Fatal("no sweep at start")
	}
	stop()
	if out := logs.String(); strings.Contains(out, "WARN") {
		t.Errorf("a sweep interrupted by shutdown was logged as a failure:\n%s", out)
	}
}

func TestSweeperRunReturnsAtOnceOnCancelledContext(t *testing.T) {
	t.Parallel()
	logger, _ := newTestLogger()
	called := false
	s := NewSweeper("inbound events", requeuerFunc(func(context.Context) (int, error) { called = true; return 0, nil }), 0, logger)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s.Run(ctx)
	if called {
		t.Error("swept with an already cancelled context")
	}
	if s.interval != DefaultSweepInterval {
		t.Errorf("interval = %v, want the default %v", s.interval, DefaultSweepInterval)
	}
}
