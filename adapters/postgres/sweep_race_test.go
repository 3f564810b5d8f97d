package postgres_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/conciergehq/concierge/core/domain"
)

// rateInOpenTx rates answer up the way SetFeedback does (the answer, then
// the conversation's counter, whose update fires the outcome trigger), in
// a transaction it leaves open for the caller to commit.
func rateInOpenTx(t *testing.T, f conversationFixture, conv domain.Conversation, answer domain.Message, at time.Time) *gorm.DB {
	t.Helper()
	tx := f.db.WithContext(ctxT(t)).Begin()
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	t.Cleanup(func() { tx.Rollback() })
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE messages SET feedback_rating = 'up', feedback_at = ? WHERE workspace_id = ? AND id = ?`, []any{at, f.ws.ID, answer.ID}},
		{`UPDATE conversations SET thumbs_up = thumbs_up + 1 WHERE workspace_id = ? AND id = ?`, []any{f.ws.ID, conv.ID}},
	} {
		if err := tx.Exec(stmt.sql, stmt.args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	return tx
}

// waitForALockWait returns once a backend of the test's database waits for
// a lock (the write the test started in a goroutine is blocked).
func waitForALockWait(t *testing.T, f conversationFixture) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		if err := f.db.WithContext(ctxT(t)).Raw(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting).Error; err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the rating never waited for the sweep's lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSweepsMissNoEventCommittedWhileTheyRun interleaves a conversation's
// event (a thumbs up) with the outcome and facts sweeps on two
// connections, both ways round, and checks that the sweeps end with the
// event counted: the outcome is RESOLVED_CONFIRMED and the facts hold the
// thumbs up. Before migration 00029 and the sweeps' separate claim, both
// orders ended with the event lost (RESOLVED_UNCONFIRMED, 0 thumbs up),
// the race behind a report that counted conversations but no handoffs.
func TestSweepsMissNoEventCommittedWhileTheyRun(t *testing.T) {
	t.Parallel()
	now := t0.Add(25 * time.Hour) // past the quiet window: the decision is final
	cases := []struct {
		name  string
		event func(t *testing.T, f conversationFixture, conv domain.Conversation, ans domain.Message)
	}{{
		// The event is open while the sweeps run, then commits.
		name: "a sweep runs while the event is open",
		event: func(t *testing.T, f conversationFixture, conv domain.Conversation, ans domain.Message) {
			tx := rateInOpenTx(t, f, conv, ans, t0.Add(time.Minute))
			if _, err := f.store.DecideDueOutcomes(ctxT(t), now, 100, domain.DecideOutcome); err != nil {
				t.Fatalf("DecideDueOutcomes: %v", err)
			}
			if _, err := f.store.RollUpDueFacts(ctxT(t), now, 100); err != nil {
				t.Fatalf("RollUpDueFacts: %v", err)
			}
			if err := tx.Commit().Error; err != nil {
				t.Fatal(err)
			}
		},
	}, {
		// A sweep claimed the row (and decided) first; the event, through
		// the store, waits for it and must leave the row due again.
		name: "the event comes while a sweep holds the row",
		event: func(t *testing.T, f conversationFixture, conv domain.Conversation, ans domain.Message) {
			sweep := f.db.WithContext(ctxT(t)).Begin()
			t.Cleanup(func() { sweep.Rollback() })
			if err := sweep.Exec(`SELECT 1 FROM conversation_outcomes WHERE conversation_id = ? FOR UPDATE`, conv.ID).Error; err != nil {
				t.Fatal(err)
			}
			if err := sweep.Exec(`UPDATE conversation_outcomes SET outcome = 'RESOLVED_UNCONFIRMED', decided_at = ?,
				final = true, next_check_at = NULL, facts_due = false WHERE conversation_id = ?`, now, conv.ID).Error; err != nil {
				t.Fatal(err)
			}
			rated := make(chan error, 1)
			go func() {
				fb, err := domain.NewFeedback("up", "", t0.Add(time.Minute))
				if err == nil {
					err = f.store.SetFeedback(context.Background(), f.ws.ID, conv.ID, ans.ID, fb)
				}
				rated <- err
			}()
			waitForALockWait(t, f)
			if err := sweep.Commit().Error; err != nil {
				t.Fatal(err)
			}
			if err := <-rated; err != nil {
				t.Fatalf("SetFeedback: %v", err)
			}
			if o := getOutcome(t, f, conv.ID); !o.DueNow {
				t.Fatalf("after the rating the outcome row is %+v, want it due", o)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newConversationFixture(t)
			ans := answer("Use the reset link on the sign-in page.")
			conv := startAnswered(t, f, "", "How do I reset my password?", ans, t0)
			tc.event(t, f, conv, ans)
			sweepReports(t, f.store, now)

			if o := getOutcome(t, f, conv.ID); o.Outcome != domain.OutcomeResolvedConfirmed {
				t.Errorf("outcome = %q, want %q (the thumbs up was missed)", o.Outcome, domain.OutcomeResolvedConfirmed)
			}
			var facts struct {
				ThumbsUp int
				Outcome  string
			}
			if err := f.db.WithContext(ctxT(t)).Raw(`SELECT thumbs_up, coalesce(outcome, '') AS outcome
				FROM conversation_facts WHERE conversation_id = ?`, conv.ID).Scan(&facts).Error; err != nil {
				t.Fatal(err)
			}
			if facts.ThumbsUp != 1 || facts.Outcome != string(domain.OutcomeResolvedConfirmed) {
				t.Errorf("facts = %+v, want 1 thumbs up and %s", facts, domain.OutcomeResolvedConfirmed)
			}
		})
	}
}
