// Package delivery holds the use cases of outbound deliveries: attempting
// one (handoffs to a workspace's helpdesk, outbound events to its events
// URL), the retry schedule, the sweep that re-drives deliveries whose task
// was lost, the delivery log a workspace reads, and the integration settings
// that say where deliveries go.
//
// The outbox row is the truth and the queue only a wake-up: an attempt
// first claims the row (counting the attempt and holding it for a lease), so
// duplicate tasks, sweeps and killed workers never make two attempts at once
// nor lose one. Receivers may still see a delivery more than once (a worker
// killed after the receiver answered); the idempotency key lets them drop
// the repeat.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Defaults of Options.
const (
	// DefaultLease holds a claimed delivery for as long as an attempt may
	// take (the delivery task's 30 s limit): after that a killed worker's
	// delivery is due again and the sweeper re-drives it.
	DefaultLease = 30 * time.Second
	// DefaultStaleAfter is how long a delivery may be overdue before the
	// sweeper assumes its task was lost and enqueues another.
	DefaultStaleAfter = time.Minute
)

// earlyTolerance lets an attempt claim a delivery that is due this much
// later, for the clock difference between the worker that scheduled a retry
// and the one that runs it. A claim's lease is a due time too, so the
// tolerance never exceeds a quarter of the lease (see Deliver): otherwise a
// short lease would hold nothing and two attempts could run at once.
const earlyTolerance = 2 * time.Second

// recordTimeout bounds writing an attempt's outcome after the attempt's own
// context ended (a worker shutting down mid-attempt still records it).
const recordTimeout = 5 * time.Second

// maxErrorLength bounds an attempt's error text in the log.
const maxErrorLength = 500

// sweepBatch is the most deliveries one sweep re-enqueues.
const sweepBatch = 100

// Deps are the service's collaborators; all are required.
type Deps struct {
	Workspaces   ports.WorkspaceStore
	Attempts     ports.DeliveryAttempts
	Deliveries   ports.DeliveryLog
	Integrations ports.IntegrationStore
	// Queue wakes workers for retried deliveries and those the sweeper
	// finds overdue.
	Queue ports.DeliveryQueue
	// Webhook sends signed deliveries to a helpdesk URL or an events URL.
	Webhook ports.Helpdesk
	// Inbox takes the helpdesk deliveries of workspaces without a helpdesk URL.
	Inbox ports.Helpdesk
	URLs  ports.ReceiverURLPolicy
	// Changes is told when integration settings change, so every pod (this
	// one first) stops deciding deliveries from a cached copy.
	Changes ports.WorkspaceNotifier
	Clock   ports.Clock
	Log     *slog.Logger
}

// Options tune retries; zero fields take the defaults.
type Options struct {
	Backoff     Backoff
	MaxAttempts int
	Lease       time.Duration
	StaleAfter  time.Duration
}

// Service runs the delivery use cases.
type Service struct {
	d    Deps
	opts Options
}

// NewService returns a Service; it panics on a missing dependency and
// returns an error for options out of range.
func NewService(d Deps, opts Options) (*Service, error) {
	if d.Workspaces == nil || d.Attempts == nil || d.Deliveries == nil || d.Integrations == nil || d.Queue == nil ||
		d.Webhook == nil || d.Inbox == nil || d.URLs == nil || d.Changes == nil || d.Clock == nil || d.Log == nil {
		panic("delivery.NewService: every dependency is required")
	}
	if opts.Backoff == (Backoff{}) {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Lease == 0 {
		opts.Lease = DefaultLease
	}
	if opts.StaleAfter == 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	switch {
	case !opts.Backoff.valid():
		return nil, fmt.Errorf("delivery: backoff base %s and cap %s must be positive, the cap not below the base", opts.Backoff.Base, opts.Backoff.Cap)
	case opts.MaxAttempts < 1:
		return nil, fmt.Errorf("delivery: max attempts %d must be at least 1", opts.MaxAttempts)
	case opts.Lease < 0 || opts.StaleAfter < 0:
		return nil, errors.New("delivery: lease and stale-after must be positive")
	}
	d.Log = d.Log.With("component", "delivery")
	return &Service{d: d, opts: opts}, nil
}

// Result is where an attempt left a delivery.
type Result struct {
	// Attempted is false when there was nothing to do: the delivery is
	// gone, not PENDING, or held by another attempt.
	Attempted bool
	Status    domain.DeliveryStatus
	// RetryIn is set when another attempt is due after this long.
	RetryIn time.Duration
	// LastError says why the delivery is not DELIVERED.
	LastError string
}

// Deliver makes one attempt of a delivery, if it is PENDING and due, and
// records it. A delivery that is gone, already finished or held by another
// attempt is left alone (Attempted false). Its error is for the store only:
// an error wrapping domain.ErrUnavailable when the outbox could not be read
// or the attempt not recorded (the claim's lease then lets a later attempt
// take over). What the receiver answered is in the Result, never an error.
func (s *Service) Deliver(ctx context.Context, id string) (Result, error) {
	now := s.d.Clock.Now()
	early := min(earlyTolerance, s.opts.Lease/4)
	d, ok, err := s.d.Attempts.ClaimDelivery(ctx, id, now.Add(early), now.Add(s.opts.Lease))
	if errors.Is(err, domain.ErrNotFound) {
		// Its workspace was deleted, and the outbox with it.
		s.d.Log.DebugContext(ctx, "delivery gone; nothing to deliver", "deliveryId", id)
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{Status: d.Status, LastError: d.LastError}, nil
	}
	ws, err := s.d.Workspaces.GetWorkspace(ctx, d.WorkspaceID)
	if errors.Is(err, domain.ErrNotFound) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	sender, to, reason := s.route(d, ws)
	if sender == nil {
		// Nothing was sent, so nothing goes in the attempt log.
		return s.finish(ctx, d, nil, ports.DeliveryOutcome{Status: domain.DeliveryFailed, LastError: reason, At: s.d.Clock.Now()}, 0)
	}
	at, started := s.d.Clock.Now(), time.Now()
	report, sendErr := sender.Deliver(ctx, to, d)
	attempt := &domain.DeliveryAttempt{
		DeliveryID: d.ID, Attempt: d.Attempts, At: at, StatusCode: report.StatusCode,
		Error: errorText(sendErr), Duration: time.Since(started),
	}
	out, retryIn := s.outcome(d, report, sendErr, s.d.Clock.Now())
	return s.finish(ctx, d, attempt, out, retryIn)
}

// route picks the receiver: the helpdesk URL's webhook or, without one, the
// built-in inbox; the events URL's webhook, or nothing when the workspace
// no longer has one (the delivery fails with the reason).
func (s *Service) route(d domain.Delivery, ws domain.Workspace) (ports.Helpdesk, ports.Endpoint, string) {
	switch d.Target {
	case domain.TargetHelpdesk:
		if ws.HelpdeskURL == "" {
			return s.d.Inbox, ports.Endpoint{}, ""
		}
		return s.d.Webhook, ports.Endpoint{URL: ws.HelpdeskURL, SigningSecret: ws.SigningSecret}, ""
	case domain.TargetEvents:
		if ws.EventsURL == "" {
			return nil, ports.Endpoint{}, "the workspace has no events URL any more; set eventsUrl and retry the delivery"
		}
		return s.d.Webhook, ports.Endpoint{URL: ws.EventsURL, SigningSecret: ws.SigningSecret}, ""
	}
	return nil, ports.Endpoint{}, fmt.Sprintf("unknown delivery target %q", d.Target)
}

// outcome decides what an attempt leaves: DELIVERED on success; FAILED when
// the receiver refused for good (domain.ErrInvalidInput) or this was the
// last attempt; otherwise PENDING, due again after the backoff (or the
// receiver's Retry-After, if longer, up to the backoff's cap).
func (s *Service) outcome(d domain.Delivery, report ports.DeliveryReport, err error, now time.Time) (ports.DeliveryOutcome, time.Duration) {
	if err == nil {
		return ports.DeliveryOutcome{Status: domain.DeliveryDelivered, At: now}, 0
	}
	text := errorText(err)
	if errors.Is(err, domain.ErrInvalidInput) {
		return ports.DeliveryOutcome{Status: domain.DeliveryFailed, LastError: text, At: now}, 0
	}
	if d.Attempts >= s.opts.MaxAttempts {
		return ports.DeliveryOutcome{Status: domain.DeliveryFailed, At: now,
			LastError: fmt.Sprintf("gave up after %d attempts: %s", d.Attempts, text)}, 0
	}
	delay := s.opts.Backoff.Delay(d.Attempts)
	if report.RetryAfter > delay {
		delay = min(report.RetryAfter, s.opts.Backoff.Cap)
	}
	return ports.DeliveryOutcome{Status: domain.DeliveryPending, NextAttemptAt: now.Add(delay), LastError: text, At: now}, delay
}

// finish records the attempt and its outcome. It outlives the attempt's
// context for a moment: an attempt that reached the receiver must be logged
// even when the worker is shutting down.
func (s *Service) finish(ctx context.Context, d domain.Delivery, attempt *domain.DeliveryAttempt, out ports.DeliveryOutcome, retryIn time.Duration) (Result, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	applied, err := s.d.Attempts.FinishAttempt(rctx, d, attempt, out)
	if err != nil {
		return Result{}, fmt.Errorf("record attempt %d of delivery %s: %w", d.Attempts, d.ID, err)
	}
	attrs := []any{"deliveryId", d.ID, "workspaceId", d.WorkspaceID, "target", d.Target, "type", d.Type, "attempt", d.Attempts}
	if attempt != nil {
		attrs = append(attrs, "statusCode", attempt.StatusCode, "durationMs", attempt.Duration.Milliseconds())
	}
	if !applied {
		// A later attempt took over (this one outlived its lease) or
		// already delivered it; its outcome stands.
		s.d.Log.InfoContext(ctx, "delivery attempt finished after another took over", attrs...)
		return Result{Attempted: true}, nil
	}
	switch out.Status {
	case domain.DeliveryDelivered:
		s.d.Log.DebugContext(ctx, "delivered", attrs...)
	case domain.DeliveryFailed:
		s.d.Log.WarnContext(ctx, "delivery failed", append(attrs, "error", out.LastError)...)
	default:
		s.d.Log.InfoContext(ctx, "delivery attempt failed; will retry", append(attrs, "error", out.LastError, "retryIn", retryIn)...)
	}
	return Result{Attempted: true, Status: out.Status, RetryIn: retryIn, LastError: out.LastError}, nil
}

// errorText is an attempt's error for the log: the sender's text (which
// never holds secrets, see ports.Helpdesk), bounded.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	if len(text) > maxErrorLength {
		text = text[:maxErrorLength-3] + "..."
	}
	return text
}

// RequeueStale enqueues deliveries overdue by more than StaleAfter: their
// task was lost (the enqueue after the commit failed) or their worker was
// killed mid-attempt. It returns how many it enqueued. A delivery whose
// task is only late gets a second one; the claim makes that harmless.
func (s *Service) RequeueStale(ctx context.Context) (int, error) {
	due, err := s.d.Attempts.ListDueDeliveries(ctx, s.d.Clock.Now().Add(-s.opts.StaleAfter), sweepBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range due {
		if err := s.d.Queue.EnqueueDelivery(ctx, d); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
