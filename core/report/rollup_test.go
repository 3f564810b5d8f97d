package report_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/report"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// scriptedRollups has `due` conversations and rolls up to limit per call;
// failAt, when positive, is the call that fails.
type scriptedRollups struct {
	due    int
	failAt int
	calls  []int
	nows   []time.Time
}

func (s *scriptedRollups) RollUpDueFacts(_ context.Context, now time.Time, limit int) (int, error) {
	s.calls, s.nows = append(s.calls, limit), append(s.nows, now)
	if len(s.calls) == s.failAt {
		return 0, errors.New("connection reset")
	}
	n := min(limit, s.due)
	s.due -= n
	return n, nil
}

func TestRollupSweep(t *testing.T) {
	now := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		due       int
		failAt    int
		wantN     int
		wantCalls int
		wantErr   bool
	}{
		{"nothing due: one call", 0, 0, 0, 1, false},
		{"less than a batch", 3, 0, 3, 1, false},
		{"exactly a batch: a second call finds none", 10, 0, 10, 2, false},
		{"several batches", 25, 0, 25, 3, false},
		{"a failure stops the sweep with what was done", 25, 2, 10, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &scriptedRollups{due: tt.due, failAt: tt.failAt}
			n, err := report.NewRollup(store, fixedClock{now}, 10).Sweep(context.Background())
			if n != tt.wantN || (err != nil) != tt.wantErr || len(store.calls) != tt.wantCalls {
				t.Fatalf("Sweep = %d, %v after %d calls; want %d, error %v, %d calls", n, err, len(store.calls), tt.wantN, tt.wantErr, tt.wantCalls)
			}
			for i, at := range store.nows {
				if !at.Equal(now) || store.calls[i] != 10 {
					t.Errorf("call %d: now %v limit %d, want one now for the whole sweep and the batch size", i, at, store.calls[i])
				}
			}
		})
	}
	store := &scriptedRollups{due: report.DefaultRollupBatch + 1}
	if n, err := report.NewRollup(store, fixedClock{now}, 0).Sweep(context.Background()); err != nil || n != report.DefaultRollupBatch+1 ||
		len(store.calls) != 2 || store.calls[0] != report.DefaultRollupBatch {
		t.Fatalf("default batch: Sweep = %d, %v, calls %v", n, err, store.calls)
	}
	// A backlog larger than one sweep's bound is left for the next sweep.
	store = &scriptedRollups{due: 1_000_000}
	if n, err := report.NewRollup(store, fixedClock{now}, 100).Sweep(context.Background()); err != nil || n >= 1_000_000 || n == 0 {
		t.Fatalf("a huge backlog: Sweep = %d, %v; want a bounded part of it", n, err)
	}
}
