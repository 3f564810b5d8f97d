package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func TestDefaultScheduleSpansADay(t *testing.T) {
	t.Parallel()
	b := delivery.DefaultBackoff
	least, most := b.Span(delivery.DefaultMaxAttempts)
	// The sum of every delay's minimum: even the unluckiest draw keeps a
	// delivery trying for over 24 hours.
	if least < 24*time.Hour {
		t.Errorf("the schedule's minimum span is %v, want at least 24h", least)
	}
	if most > 72*time.Hour {
		t.Errorf("the schedule's maximum span is %v, want at most 72h", most)
	}
	t.Logf("%d attempts span %v to %v", delivery.DefaultMaxAttempts, least, most)

	// Recompute the minimum by hand so Span itself is checked.
	var sum time.Duration
	for n := 1; n < delivery.DefaultMaxAttempts; n++ {
		c := min(10*time.Second*time.Duration(1<<min(n-1, 20)), 2*time.Hour)
		sum += c / 2
	}
	if sum != least {
		t.Errorf("Span minimum %v, recomputed %v", least, sum)
	}
}

func TestBackoffCeilingAndJitter(t *testing.T) {
	t.Parallel()
	b := delivery.Backoff{Base: 10 * time.Second, Cap: time.Hour}
	for _, tt := range []struct {
		n    int
		want time.Duration
	}{
		{-3, 10 * time.Second}, {0, 10 * time.Second}, {1, 10 * time.Second}, {2, 20 * time.Second},
		{3, 40 * time.Second}, {9, 2560 * time.Second}, {10, time.Hour}, {11, time.Hour}, {40, time.Hour}, {1 << 30, time.Hour},
	} {
		if got := b.Ceiling(tt.n); got != tt.want {
			t.Errorf("Ceiling(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
	for _, n := range []int{1, 4, 12, 40} {
		c := b.Ceiling(n)
		seen := map[time.Duration]bool{}
		for range 500 {
			d := b.Delay(n)
			if d < c/2 || d > c {
				t.Fatalf("Delay(%d) = %v, want within [%v, %v]", n, d, c/2, c)
			}
			seen[d] = true
		}
		if len(seen) < 50 {
			t.Errorf("Delay(%d) took %d distinct values in 500 draws: no jitter?", n, len(seen))
		}
	}
}

func TestNewServiceRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []delivery.Options{
		{Backoff: delivery.Backoff{Base: time.Minute, Cap: time.Second}},
		{Backoff: delivery.Backoff{Base: -time.Second, Cap: time.Second}},
		{MaxAttempts: -1},
		{Lease: -time.Second},
	} {
		if _, err := delivery.NewService(depsFor(t), o); err == nil {
			t.Errorf("NewService(%+v) succeeded", o)
		}
	}
}

// depsFor returns complete dependencies over empty fakes.
func depsFor(t *testing.T) delivery.Deps {
	t.Helper()
	o, ws := newOutbox(), newWorkspaces()
	return delivery.Deps{
		Workspaces: ws, Attempts: o, Deliveries: o, Integrations: ws, Queue: &queue{},
		Webhook: &sender{}, Inbox: &sender{}, URLs: urlPolicy{}, Changes: &announcements{}, Clock: &fixedClock{now: t0},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func TestDeliverOutcomes(t *testing.T) {
	t.Parallel()
	unavailable := func(report ports.DeliveryReport) func(context.Context) (ports.DeliveryReport, error) {
		return func(context.Context) (ports.DeliveryReport, error) {
			return report, fmt.Errorf("receiver desk.example.com answered %d: %w", report.StatusCode, domain.ErrUnavailable)
		}
	}
	opts := delivery.Options{Backoff: delivery.Backoff{Base: 10 * time.Second, Cap: time.Hour}, MaxAttempts: 5}
	tests := []struct {
		name        string
		helpdesk    string
		events      string
		target      domain.DeliveryTarget
		attempts    int // before this attempt
		reply       func(context.Context) (ports.DeliveryReport, error)
		status      domain.DeliveryStatus
		retryMin    time.Duration
		retryMax    time.Duration
		viaWebhook  bool
		viaInbox    bool
		logged      bool
		errContains string
	}{
		{name: "helpdesk webhook accepts", helpdesk: "https://desk.example.com/in", target: domain.TargetHelpdesk,
			status: domain.DeliveryDelivered, viaWebhook: true, logged: true},
		{name: "no helpdesk URL: the built-in inbox", target: domain.TargetHelpdesk,
			status: domain.DeliveryDelivered, viaInbox: true, logged: true},
		{name: "events webhook accepts", events: "https://events.example.com/in", target: domain.TargetEvents,
			status: domain.DeliveryDelivered, viaWebhook: true, logged: true},
		{name: "first failure waits 5 to 10 s", helpdesk: "https://desk.example.com/in", target: domain.TargetHelpdesk,
			reply: unavailable(ports.DeliveryReport{StatusCode: 503}), status: domain.DeliveryPending,
			retryMin: 5 * time.Second, retryMax: 10 * time.Second, viaWebhook: true, logged: true, errContains: "answered 503"},
		{name: "third failure waits 20 to 40 s", helpdesk: "https://desk.example.com/in", target: domain.TargetHelpdesk, attempts: 2,
			reply: unavailable(ports.DeliveryReport{StatusCode: 500}), status: domain.DeliveryPending,
			retryMin: 20 * time.Second, retryMax: 40 * time.Second, viaWebhook: true, logged: true},
		{name: "a longer Retry-After is honoured", helpdesk: "https://desk.example.com/in", target: domain.TargetHelpdesk,
			reply: unavailable(ports.DeliveryReport{StatusCode: 429, RetryAfter: 10 * time.Minute}), status: domain.DeliveryPending,
			retryMin: 10 * time.Minute, retryMax: 10 * time.Minute, viaWebhook: true, logged: true},
		{name: "Retry-After is capped", helpdesk: "https://desk.example.com/in", target: domain.TargetHelpdesk,
			reply: unavailable(ports.DeliveryReport{StatusCode: 503, RetryAfter: 20 * time.Hour}), status: domain.DeliveryPending,
			retryMin: time.Hour, retryMax: time.Hour, viaWebhook: true, logged: true},
		{name: "refused for good", helpdesk: "https://desk.example.com/in", target: domain.TargetHelpdesk,
			reply: func(context.Context) (ports.DeliveryReport, error) {
				return ports.DeliveryReport{StatusCode: 410}, domain.Invalid("receiver desk.example.com answered 410")
			}, status: domain.DeliveryFailed, viaWebhook: true, logged: true, errContains: "answered 410"},
		{name: "the last attempt gives up", helpdesk: "https://desk.example.com/in", target: domain.TargetHelpdesk, attempts: 4,
			reply: unavailable(ports.DeliveryReport{StatusCode: 502}), status: domain.DeliveryFailed, viaWebhook: true, logged: true,
			errContains: "gave up after 5 attempts: receiver desk.example.com answered 502"},
		{name: "an unknown error is retried", events: "https://events.example.com/in", target: domain.TargetEvents,
			reply:  func(context.Context) (ports.DeliveryReport, error) { return ports.DeliveryReport{}, errors.New("boom") },
			status: domain.DeliveryPending, retryMin: 5 * time.Second, retryMax: 10 * time.Second, viaWebhook: true, logged: true},
		{name: "events URL removed since: failed, nothing sent", target: domain.TargetEvents,
			status: domain.DeliveryFailed, errContains: "no events URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := workspace(domain.PlanStandard, tt.helpdesk, tt.events)
			d := pending(ws, tt.target, tt.attempts)
			h := newHarness(t, opts, []domain.Workspace{ws}, d)
			h.webhook.reply = tt.reply
			res, err := h.svc.Deliver(context.Background(), d.ID)
			if err != nil {
				t.Fatalf("Deliver: %v", err)
			}
			if !res.Attempted || res.Status != tt.status {
				t.Fatalf("result = %+v, want attempted, %s", res, tt.status)
			}
			if res.RetryIn < tt.retryMin || res.RetryIn > tt.retryMax {
				t.Errorf("RetryIn = %v, want within [%v, %v]", res.RetryIn, tt.retryMin, tt.retryMax)
			}
			row := h.outbox.get(d.ID)
			if row.Status != tt.status || row.Attempts != tt.attempts+1 {
				t.Errorf("row = %s after %d attempts, want %s after %d", row.Status, row.Attempts, tt.status, tt.attempts+1)
			}
			if tt.status == domain.DeliveryPending && !row.NextAttemptAt.Equal(t0.Add(res.RetryIn)) {
				t.Errorf("next attempt at %v, want now + RetryIn = %v", row.NextAttemptAt, t0.Add(res.RetryIn))
			}
			if tt.status == domain.DeliveryDelivered && !row.DeliveredAt.Equal(t0) {
				t.Errorf("delivered at %v, want %v", row.DeliveredAt, t0)
			}
			if !strings.Contains(row.LastError, tt.errContains) || (tt.status == domain.DeliveryDelivered && row.LastError != "") {
				t.Errorf("last error %q, want it to contain %q", row.LastError, tt.errContains)
			}
			webhooks, inboxes := h.webhook.sent(), h.inbox.sent()
			if (len(webhooks) == 1) != tt.viaWebhook || (len(inboxes) == 1) != tt.viaInbox || len(webhooks)+len(inboxes) > 1 {
				t.Fatalf("sent via webhook %d, inbox %d", len(webhooks), len(inboxes))
			}
			if tt.viaWebhook {
				want := ports.Endpoint{URL: tt.helpdesk + tt.events, SigningSecret: ws.SigningSecret}
				if webhooks[0] != want {
					t.Errorf("endpoint = %+v, want %+v", webhooks[0], want)
				}
			}
			if logged := len(h.outbox.log) == 1; logged != tt.logged {
				t.Fatalf("attempt log = %+v, want logged %v", h.outbox.log, tt.logged)
			}
			if tt.logged {
				a := h.outbox.log[0]
				if a.Attempt != tt.attempts+1 || a.DeliveryID != d.ID || !a.At.Equal(t0) || (tt.status == domain.DeliveryDelivered) != (a.Error == "") {
					t.Errorf("attempt = %+v", a)
				}
			}
		})
	}
}

func TestDeliverLeavesAloneWhatIsNotDue(t *testing.T) {
	t.Parallel()
	ws := workspace(domain.PlanStandard, "https://desk.example.com/in", "")
	done := pending(ws, domain.TargetHelpdesk, 1)
	done.Status = domain.DeliveryDelivered
	held := pending(ws, domain.TargetHelpdesk, 1)
	held.NextAttemptAt = t0.Add(time.Minute) // another attempt's lease, or a retry not yet due
	slightlyEarly := pending(ws, domain.TargetHelpdesk, 1)
	slightlyEarly.NextAttemptAt = t0.Add(time.Second) // within the clock tolerance
	h := newHarness(t, delivery.Options{}, []domain.Workspace{ws}, done, held, slightlyEarly)

	for _, id := range []string{done.ID, held.ID, domain.NewID(domain.PrefixDelivery)} {
		res, err := h.svc.Deliver(context.Background(), id)
		if err != nil || res.Attempted {
			t.Errorf("Deliver(%s) = %+v, %v; want nothing done", id, res, err)
		}
	}
	if n := len(h.webhook.sent()); n != 0 {
		t.Fatalf("sent %d deliveries that were not due", n)
	}
	if res, err := h.svc.Deliver(context.Background(), slightlyEarly.ID); err != nil || res.Status != domain.DeliveryDelivered {
		t.Fatalf("a retry a second early = %+v, %v; want delivered", res, err)
	}
}

// A claim holds its delivery for the lease, however short: the clock
// tolerance granted to early retries must not let a second attempt claim a
// delivery while the first is still talking to the receiver.
func TestDeliverShortLeaseStillHolds(t *testing.T) {
	t.Parallel()
	ws := workspace(domain.PlanStandard, "https://desk.example.com/in", "")
	d := pending(ws, domain.TargetHelpdesk, 0)
	h := newHarness(t, delivery.Options{Lease: 2 * time.Second}, []domain.Workspace{ws}, d)
	var during delivery.Result
	nested := false
	h.webhook.reply = func(ctx context.Context) (ports.DeliveryReport, error) {
		if !nested {
			nested = true
			var err error
			if during, err = h.svc.Deliver(ctx, d.ID); err != nil {
				t.Errorf("second Deliver: %v", err)
			}
		}
		return ports.DeliveryReport{StatusCode: 200}, nil
	}
	res, err := h.svc.Deliver(context.Background(), d.ID)
	if err != nil || res.Status != domain.DeliveryDelivered {
		t.Fatalf("Deliver = %+v, %v; want delivered", res, err)
	}
	if during.Attempted || len(h.webhook.sent()) != 1 {
		t.Fatalf("a second attempt ran during the first's lease: %+v, %d sends", during, len(h.webhook.sent()))
	}
}

func TestDeliverRecordsEvenWhenCancelled(t *testing.T) {
	t.Parallel()
	ws := workspace(domain.PlanStandard, "https://desk.example.com/in", "")
	d := pending(ws, domain.TargetHelpdesk, 0)
	h := newHarness(t, delivery.Options{}, []domain.Workspace{ws}, d)
	ctx, cancel := context.WithCancel(context.Background())
	// The worker shuts down while the receiver is answering.
	h.webhook.reply = func(context.Context) (ports.DeliveryReport, error) {
		cancel()
		return ports.DeliveryReport{}, domain.Unavailable("deliver to desk.example.com: interrupted", context.Canceled)
	}
	res, err := h.svc.Deliver(ctx, d.ID)
	if err != nil || res.Status != domain.DeliveryPending {
		t.Fatalf("Deliver = %+v, %v", res, err)
	}
	if len(h.outbox.finishCtxs) != 1 || h.outbox.finishCtxs[0] != nil {
		t.Fatalf("the outcome was recorded under a cancelled context: %v", h.outbox.finishCtxs)
	}
	if len(h.outbox.log) != 1 {
		t.Fatalf("attempt not logged")
	}
}

func TestDeliverReportsStoreFailures(t *testing.T) {
	t.Parallel()
	ws := workspace(domain.PlanStandard, "", "")
	d := pending(ws, domain.TargetHelpdesk, 0)
	h := newHarness(t, delivery.Options{}, []domain.Workspace{ws}, d)
	h.outbox.finishErr = domain.Unavailable("postgres", errors.New("connection refused"))
	_, err := h.svc.Deliver(context.Background(), d.ID)
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	// The claim holds the delivery until its lease ends; then it is due again.
	if row := h.outbox.get(d.ID); row.Status != domain.DeliveryPending || !row.NextAttemptAt.Equal(t0.Add(delivery.DefaultLease)) {
		t.Fatalf("row = %+v", row)
	}
}

func TestRequeueStale(t *testing.T) {
	t.Parallel()
	ws := workspace(domain.PlanStandard, "", "")
	lost := pending(ws, domain.TargetHelpdesk, 0) // due a minute ago, never attempted
	lost.NextAttemptAt = t0.Add(-10 * time.Minute)
	killed := pending(ws, domain.TargetHelpdesk, 3) // its worker died; the lease ended
	killed.NextAttemptAt = t0.Add(-2 * time.Minute)
	fresh := pending(ws, domain.TargetHelpdesk, 0) // its task is about to run
	fresh.NextAttemptAt = t0.Add(-10 * time.Second)
	later := pending(ws, domain.TargetHelpdesk, 1)
	later.NextAttemptAt = t0.Add(time.Hour)
	h := newHarness(t, delivery.Options{StaleAfter: time.Minute}, []domain.Workspace{ws}, lost, killed, fresh, later)

	n, err := h.svc.RequeueStale(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("RequeueStale = %d, %v; want 2", n, err)
	}
	if got := strings.Join(h.queue.ids, ","); got != lost.ID+","+killed.ID {
		t.Errorf("enqueued %s, want the lost then the killed delivery", got)
	}
	h.queue.err = domain.Unavailable("redis", errors.New("down"))
	if n, err := h.svc.RequeueStale(context.Background()); n != 0 || !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("with the queue down: %d, %v", n, err)
	}
}
