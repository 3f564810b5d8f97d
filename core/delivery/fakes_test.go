package delivery_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

type fixedClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fixedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// outbox is an in-memory DeliveryAttempts and DeliveryLog with the store's
// claim and finish rules.
type outbox struct {
	mu         sync.Mutex
	rows       map[string]domain.Delivery
	log        []domain.DeliveryAttempt
	finishErr  error
	finishCtxs []error // ctx.Err() seen by each FinishAttempt
}

func newOutbox(ds ...domain.Delivery) *outbox {
	o := &outbox{rows: map[string]domain.Delivery{}}
	for _, d := range ds {
		o.rows[d.ID] = d
	}
	return o
}

func (o *outbox) get(id string) domain.Delivery {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rows[id]
}

func (o *outbox) ClaimDelivery(_ context.Context, id string, dueBy, until time.Time) (domain.Delivery, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.rows[id]
	if !ok {
		return domain.Delivery{}, false, domain.NotFound("delivery")
	}
	if d.Status != domain.DeliveryPending || d.NextAttemptAt.After(dueBy) {
		return d, false, nil
	}
	d.Attempts++
	d.NextAttemptAt = until
	o.rows[id] = d
	return d, true, nil
}

func (o *outbox) FinishAttempt(ctx context.Context, d domain.Delivery, a *domain.DeliveryAttempt, out ports.DeliveryOutcome) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finishCtxs = append(o.finishCtxs, ctx.Err())
	if o.finishErr != nil {
		return false, o.finishErr
	}
	if a != nil {
		o.log = append(o.log, *a)
	}
	cur, ok := o.rows[d.ID]
	if !ok {
		return false, domain.NotFound("delivery")
	}
	if cur.Status != domain.DeliveryPending || (out.Status != domain.DeliveryDelivered && cur.Attempts != d.Attempts) {
		return false, nil
	}
	cur.Status, cur.LastError = out.Status, out.LastError
	switch out.Status {
	case domain.DeliveryDelivered:
		cur.DeliveredAt = out.At
	case domain.DeliveryPending:
		cur.NextAttemptAt = out.NextAttemptAt
	}
	o.rows[d.ID] = cur
	return true, nil
}

func (o *outbox) ListDueDeliveries(_ context.Context, before time.Time, limit int) ([]domain.Delivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []domain.Delivery
	for _, d := range o.rows {
		if d.Status == domain.DeliveryPending && d.NextAttemptAt.Before(before) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NextAttemptAt.Before(out[j].NextAttemptAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (o *outbox) ListDeliveries(_ context.Context, workspaceID string, f domain.DeliveryFilter, _ domain.PageRequest) (domain.Page[domain.Delivery], error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var p domain.Page[domain.Delivery]
	for _, d := range o.rows {
		if d.WorkspaceID == workspaceID && (f.Target == "" || d.Target == f.Target) && (f.Status == "" || d.Status == f.Status) {
			p.Items = append(p.Items, d)
		}
	}
	return p, nil
}

func (o *outbox) GetDelivery(_ context.Context, workspaceID, id string) (domain.Delivery, []domain.DeliveryAttempt, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.rows[id]
	if !ok || d.WorkspaceID != workspaceID {
		return domain.Delivery{}, nil, domain.NotFound("delivery")
	}
	return d, nil, nil
}

func (o *outbox) RedriveDelivery(_ context.Context, workspaceID, id string, at time.Time) (domain.Delivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.rows[id]
	if !ok || d.WorkspaceID != workspaceID {
		return domain.Delivery{}, domain.NotFound("delivery")
	}
	if d.Status != domain.DeliveryFailed {
		return domain.Delivery{}, domain.Conflict("not FAILED")
	}
	d.Status, d.NextAttemptAt = domain.DeliveryPending, at
	o.rows[id] = d
	return d, nil
}

// workspaces is an in-memory WorkspaceStore and IntegrationStore.
type workspaces struct {
	mu  sync.Mutex
	all map[string]domain.Workspace
}

func newWorkspaces(ws ...domain.Workspace) *workspaces {
	s := &workspaces{all: map[string]domain.Workspace{}}
	for _, w := range ws {
		s.all[w.ID] = w
	}
	return s
}

func (s *workspaces) CreateWorkspace(context.Context, domain.Workspace, domain.APIKey) error {
	return errors.New("not used")
}

func (s *workspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.all[id]
	if !ok {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	return ws, nil
}

func (s *workspaces) UpdateWorkspace(context.Context, domain.Workspace) error {
	return errors.New("not used")
}

func (s *workspaces) FindWorkspaceByWebhookSecretHash(context.Context, string) (domain.Workspace, error) {
	return domain.Workspace{}, errors.New("not used")
}

func (s *workspaces) UpdateIntegrations(_ context.Context, id string, p ports.IntegrationsPatch, at time.Time) (domain.Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.all[id]
	if !ok {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	if p.HelpdeskURL != nil {
		ws.HelpdeskURL = *p.HelpdeskURL
	}
	if p.EventsURL != nil {
		ws.EventsURL = *p.EventsURL
	}
	switch {
	case p.SigningSecret != "":
		ws.SigningSecret = p.SigningSecret
	case ws.SigningSecret == "" && p.SigningSecretIfNone != "":
		ws.SigningSecret = p.SigningSecretIfNone
	}
	ws.UpdatedAt = at
	s.all[id] = ws
	return ws, nil
}

// queue records enqueued deliveries; err, when set, is returned instead.
type queue struct {
	mu  sync.Mutex
	ids []string
	err error
}

func (q *queue) EnqueueDelivery(_ context.Context, d domain.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	q.ids = append(q.ids, d.ID)
	return nil
}

// sender records what it was asked to send and answers with reply.
type sender struct {
	mu    sync.Mutex
	calls []ports.Endpoint
	reply func(ctx context.Context) (ports.DeliveryReport, error)
}

func (s *sender) Deliver(ctx context.Context, to ports.Endpoint, _ domain.Delivery) (ports.DeliveryReport, error) {
	s.mu.Lock()
	s.calls = append(s.calls, to)
	s.mu.Unlock()
	if s.reply == nil {
		return ports.DeliveryReport{StatusCode: 200}, nil
	}
	return s.reply(ctx)
}

func (s *sender) sent() []ports.Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ports.Endpoint(nil), s.calls...)
}

// urlPolicy accepts https URLs and refuses anything containing "internal".
type urlPolicy struct{}

func (urlPolicy) CheckReceiverURL(field, raw string) (string, error) {
	if !strings.HasPrefix(raw, "https://") {
		return "", domain.InvalidField(field, "must use https")
	}
	if strings.Contains(raw, "internal") {
		return "", domain.InvalidField(field, "refused: internal")
	}
	return raw, nil
}

type harness struct {
	svc     *delivery.Service
	outbox  *outbox
	ws      *workspaces
	queue   *queue
	webhook *sender
	inbox   *sender
	clock   *fixedClock
	changes *announcements
}

// announcements records WorkspaceChanged calls.
type announcements struct {
	mu  sync.Mutex
	ids []string
}

func (a *announcements) WorkspaceChanged(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ids = append(a.ids, id)
	return nil
}

func (a *announcements) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ids)
}

func newHarness(t *testing.T, opts delivery.Options, wss []domain.Workspace, ds ...domain.Delivery) *harness {
	t.Helper()
	h := &harness{
		outbox: newOutbox(ds...), ws: newWorkspaces(wss...), queue: &queue{},
		webhook: &sender{}, inbox: &sender{}, clock: &fixedClock{now: t0}, changes: &announcements{},
	}
	svc, err := delivery.NewService(delivery.Deps{
		Workspaces: h.ws, Attempts: h.outbox, Deliveries: h.outbox, Integrations: h.ws, Queue: h.queue,
		Webhook: h.webhook, Inbox: h.inbox, URLs: urlPolicy{}, Changes: h.changes, Clock: h.clock,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.svc = svc
	return h
}

func workspace(plan domain.Plan, helpdeskURL, eventsURL string) domain.Workspace {
	return domain.Workspace{
		ID: domain.NewID(domain.PrefixWorkspace), Name: "Acme", Plan: plan,
		HelpdeskURL: helpdeskURL, EventsURL: eventsURL, SigningSecret: domain.NewSigningSecret(),
	}
}

func pending(ws domain.Workspace, target domain.DeliveryTarget, attempts int) domain.Delivery {
	conv := domain.Conversation{ID: domain.NewID(domain.PrefixSession), WorkspaceID: ws.ID}
	typ := domain.EventHandoffRequested
	if target == domain.TargetEvents {
		typ = domain.EventConversationCreated
	}
	d := domain.NewDelivery(target, typ, conv, t0.Add(-time.Minute))
	d.Attempts = attempts
	return d
}
