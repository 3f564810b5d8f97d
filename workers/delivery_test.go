package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"gorm.io/gorm"

	"github.com/conciergehq/concierge/adapters/helpdesk/inbox"
	"github.com/conciergehq/concierge/adapters/helpdesk/webhook"
	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
)

// delivererFunc adapts a function to DeliveryProcessor; nil delivers
// nothing.
type delivererFunc func(ctx context.Context, id string) (delivery.Result, error)

func (f delivererFunc) Deliver(ctx context.Context, id string) (delivery.Result, error) {
	if f == nil {
		return delivery.Result{}, nil
	}
	return f(ctx, id)
}

func TestDeliverTasksAndLimits(t *testing.T) {
	t.Parallel()
	if deliveryMaxRetry+1 != delivery.DefaultMaxAttempts {
		t.Fatalf("MaxRetry %d + the first attempt != the delivery service's %d attempts", deliveryMaxRetry, delivery.DefaultMaxAttempts)
	}
	conv := domain.Conversation{ID: domain.NewID(domain.PrefixSession), WorkspaceID: "ws_x"}
	d := domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, conv, time.Now())
	if _, err := NewDeliverTask(context.Background(), domain.Delivery{Target: domain.TargetHelpdesk}); err == nil {
		t.Error("a delivery without id got a task")
	}
	if _, err := NewDeliverTask(context.Background(), domain.Delivery{ID: d.ID, Target: "fax"}); err == nil {
		t.Error("a delivery with an unknown target got a task")
	}

	opt := redisOpt(t)
	enq := newEnqueuer(t, opt)
	in := newInspector(t, opt)
	events := d
	events.ID, events.Target = domain.NewID(domain.PrefixDelivery), domain.TargetEvents
	retried := d
	retried.Attempts = 3
	for _, x := range []domain.Delivery{d, d, events, retried} {
		if err := enq.EnqueueDelivery(t.Context(), x); err != nil {
			t.Fatalf("EnqueueDelivery: %v", err)
		}
	}
	tasks, err := in.ListPendingTasks(QueueDelivery)
	if err != nil {
		t.Fatal(err)
	}
	// Every enqueue is a task of its own, a repeat too: the outbox row's
	// claim, not a task id, keeps a delivery to one attempt at a time.
	got := map[string]int{}
	for _, task := range tasks {
		var p DeliverPayload
		if err := json.Unmarshal(task.Payload, &p); err != nil {
			t.Errorf("task %s payload %s", task.ID, task.Payload)
			continue
		}
		want := TypeHandoffDeliver
		if p.DeliveryID == events.ID {
			want = TypeEventDeliver
		}
		if task.Type != want || task.MaxRetry != 40 || task.Timeout != 30*time.Second {
			t.Errorf("task %s = %+v, want %s with MaxRetry 40 and a 30s timeout", task.ID, task, want)
		}
		got[p.DeliveryID]++
	}
	if want := map[string]int{d.ID: 3, events.ID: 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("queued tasks per delivery %v, want %v", got, want)
	}
}

func TestDeliveryOutcomeMapping(t *testing.T) {
	t.Parallel()
	id := domain.NewID(domain.PrefixDelivery)
	tests := []struct {
		name   string
		res    delivery.Result
		nilErr bool
		skip   bool
		delay  time.Duration
	}{
		{"nothing to do", delivery.Result{}, true, false, 0},
		{"held by another attempt", delivery.Result{Status: domain.DeliveryPending}, true, false, 0},
		{"outcome overtaken", delivery.Result{Attempted: true}, true, false, 0},
		{"delivered", delivery.Result{Attempted: true, Status: domain.DeliveryDelivered}, true, false, 0},
		{"retry", delivery.Result{Attempted: true, Status: domain.DeliveryPending, RetryIn: 42 * time.Second, LastError: "503"}, false, false, 42 * time.Second},
		{"failed", delivery.Result{Attempted: true, Status: domain.DeliveryFailed, LastError: "410"}, false, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := deliveryOutcome(id, tt.res)
			if (err == nil) != tt.nilErr {
				t.Fatalf("err = %v, want nil %v", err, tt.nilErr)
			}
			if err == nil {
				return
			}
			if errors.Is(err, asynq.SkipRetry) != tt.skip {
				t.Errorf("SkipRetry = %v, want %v", !tt.skip, tt.skip)
			}
			if !isDeliveryOutcome(err) || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), tt.res.LastError) {
				t.Errorf("err = %v", err)
			}
			if tt.delay > 0 {
				for _, n := range []int{0, 5, 39} {
					if d := RetryDelay(n, err, nil); d != tt.delay {
						t.Errorf("RetryDelay(%d) = %v, want the row's %v", n, d, tt.delay)
					}
				}
			}
		})
	}
}

// deliveryWorld is the real thing: Postgres outbox, the delivery service
// with the webhook sender and the inbox, the asynq server and enqueuer.
type deliveryWorld struct {
	db    *gorm.DB
	store *postgres.Store
	svc   *delivery.Service
	enq   *Enqueuer
	in    *asynq.Inspector
	logs  *logBuffer
}

func newDeliveryWorld(t *testing.T, backoff delivery.Backoff, maxAttempts int) *deliveryWorld {
	t.Helper()
	opt := redisOpt(t)
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	sender, err := webhook.New(webhook.Options{AllowPrivateAddresses: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w := &deliveryWorld{db: db, store: store, enq: newEnqueuer(t, opt), in: newInspector(t, opt)}
	logger, logs := newTestLogger()
	w.logs = logs
	w.svc, err = delivery.NewService(delivery.Deps{
		Workspaces: store, Attempts: store, Deliveries: store, Integrations: store, Queue: w.enq,
		Webhook: sender, Inbox: inbox.New(), URLs: sender, Changes: noAnnouncements{}, Clock: domain.SystemClock{}, Log: logger,
	}, delivery.Options{Backoff: backoff, MaxAttempts: maxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	startServerWith(t, opt, ServerConfig{}, Processors{
		Inbound:   processorFunc(func(context.Context, string) error { return nil }),
		Knowledge: indexerFunc(func(context.Context, domain.SourceRef, bool) error { return nil }),
		Slots:     unboundedSlots{}, Delivery: w.svc,
	})
	return w
}

// workspaceWith creates a workspace delivering to helpdeskURL (and events
// to eventsURL) and returns it with its signing secret.
func (w *deliveryWorld) workspaceWith(t *testing.T, helpdeskURL, eventsURL string) domain.Workspace {
	t.Helper()
	now := time.Now()
	ws := domain.Workspace{ID: domain.NewID(domain.PrefixWorkspace), Name: "Acme", Plan: domain.PlanStandard,
		WebhookSecret: domain.NewSecret(domain.PrefixWebhookSecret), CreatedAt: now, UpdatedAt: now}
	key, _ := domain.NewAPIKey(ws.ID, "default", now)
	if err := w.store.CreateWorkspace(t.Context(), ws, key); err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	change := delivery.IntegrationsChange{HelpdeskURL: str(helpdeskURL), EventsURL: str(eventsURL)}
	updated, _, err := w.svc.SetIntegrations(t.Context(), &ws, change)
	if err != nil {
		t.Fatal(err)
	}
	return updated
}

// outboxRow writes a delivery the way a state change would, with a minimal
// snapshot, straight into the outbox table.
func (w *deliveryWorld) outboxRow(t *testing.T, ws domain.Workspace, target domain.DeliveryTarget, typ string) domain.Delivery {
	t.Helper()
	conv := domain.Conversation{ID: domain.NewID(domain.PrefixSession), WorkspaceID: ws.ID, AgentSlug: "support",
		Channel: domain.ChannelChat, Status: domain.StatusHandoffRequested, CreatedAt: time.Now().UTC()}
	d := domain.NewDelivery(target, typ, conv, time.Now())
	payload := fmt.Sprintf(`{"conversation":{"id":%q,"agentId":"","agentSlug":"support","channel":"CHAT","status":"HANDOFF_REQUESTED","createdAt":%q}}`,
		conv.ID, conv.CreatedAt.Format(time.RFC3339Nano))
	err := w.db.WithContext(t.Context()).Exec(`INSERT INTO outbox (id, workspace_id, target, event_type, conversation_id, payload, status, attempts, next_attempt_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?::jsonb, 'PENDING', 0, ?, ?)`,
		d.ID, d.WorkspaceID, string(d.Target), d.Type, d.ConversationID, payload, d.NextAttemptAt, d.CreatedAt).Error
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDeliveryIsRetriedUntilTheReceiverAcceptsIt(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r)
		bodies = append(bodies, string(body))
		n := len(got)
		mu.Unlock()
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(receiver.Close)
	w := newDeliveryWorld(t, delivery.Backoff{Base: 200 * time.Millisecond, Cap: 400 * time.Millisecond}, 10)
	ws := w.workspaceWith(t, receiver.URL+"/hooks", "")
	d := w.outboxRow(t, ws, domain.TargetHelpdesk, domain.EventHandoffRequested)
	if err := w.enq.EnqueueDelivery(t.Context(), d); err != nil {
		t.Fatal(err)
	}

	deliveredEventually(t, w.store, ws.ID, d.ID)
	stored, attempts, err := w.store.GetDelivery(t.Context(), ws.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Attempts != 3 || len(attempts) != 3 || attempts[0].StatusCode != 503 || attempts[1].StatusCode != 503 || attempts[2].StatusCode != 200 {
		t.Fatalf("delivery %+v with attempts %+v; want 503, 503, 200", stored, attempts)
	}
	// The retries waited the backoff: at least the first delay's floor.
	if gap := attempts[1].At.Sub(attempts[0].At); gap < 100*time.Millisecond {
		t.Errorf("second attempt %v after the first, want at least 100ms", gap)
	}
	mu.Lock()
	defer mu.Unlock()
	verifier, _ := standardwebhooks.NewWebhook(ws.SigningSecret)
	for i, r := range got {
		if r.Header.Get("webhook-id") != d.ID || bodies[i] != bodies[0] {
			t.Errorf("request %d: id %q, body changed %v", i, r.Header.Get("webhook-id"), bodies[i] != bodies[0])
		}
		if err := verifier.Verify([]byte(bodies[i]), r.Header); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if strings.Contains(w.logs.String(), "task failed") {
		t.Errorf("receiver answers were logged as task failures:\n%s", w.logs.String())
	}
}

func TestDeliveryRefusedForGoodFailsWithoutRetry(t *testing.T) {
	t.Parallel()
	var hits sync.WaitGroup
	hits.Add(1)
	var once sync.Once
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		once.Do(hits.Done)
		w.WriteHeader(http.StatusGone)
	}))
	t.Cleanup(receiver.Close)
	w := newDeliveryWorld(t, delivery.Backoff{Base: 100 * time.Millisecond, Cap: 100 * time.Millisecond}, 10)
	ws := w.workspaceWith(t, "", receiver.URL+"/events")
	d := w.outboxRow(t, ws, domain.TargetEvents, domain.EventConversationCreated)
	// The inbox takes the helpdesk delivery of the same workspace (no helpdesk URL).
	handoff := w.outboxRow(t, ws, domain.TargetHelpdesk, domain.EventHandoffRequested)
	// The events delivery is enqueued twice, as when a sweep catches a late
	// task: it is attempted once all the same.
	for _, x := range []domain.Delivery{d, d, handoff} {
		if err := w.enq.EnqueueDelivery(t.Context(), x); err != nil {
			t.Fatal(err)
		}
	}
	deliveredEventually(t, w.store, ws.ID, handoff.ID)
	eventually(t, "the events delivery to fail", func() bool {
		stored, _, err := w.store.GetDelivery(t.Context(), ws.ID, d.ID)
		return err == nil && stored.Status == domain.DeliveryFailed
	})
	stored, attempts, _ := w.store.GetDelivery(t.Context(), ws.ID, d.ID)
	if stored.Attempts != 1 || len(attempts) != 1 || attempts[0].StatusCode != 410 || !strings.Contains(stored.LastError, "answered 410") {
		t.Fatalf("failed delivery %+v, attempts %+v", stored, attempts)
	}
	archived := onlyTaskIn(t, w.in, QueueDelivery, w.in.ListArchivedTasks)
	if archived.Retried != 0 || deliveryIDOf(asynq.NewTask(archived.Type, archived.Payload)) != d.ID {
		t.Errorf("archived %+v, want the events task, never retried", archived)
	}
	if out := w.logs.String(); !strings.Contains(out, `"msg":"delivery failed"`) || strings.Contains(out, "task failed permanently") {
		t.Errorf("want one warning from the delivery service and no task error:\n%s", out)
	}
	// Re-driven through the API's use case: a fresh task, despite the archived one.
	if _, err := w.svc.Retry(t.Context(), ws.ID, d.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second attempt", func() bool {
		_, attempts, err := w.store.GetDelivery(t.Context(), ws.ID, d.ID)
		return err == nil && len(attempts) == 2
	})
}

func TestSweeperRedrivesADeliveryWhoseTaskWasLost(t *testing.T) {
	t.Parallel()
	delivered := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delivered <- r.Header.Get("webhook-id")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	w := newDeliveryWorld(t, delivery.DefaultBackoff, 0)
	ws := w.workspaceWith(t, receiver.URL, "")
	d := w.outboxRow(t, ws, domain.TargetHelpdesk, domain.EventHandoffRequested)
	// Never enqueued (Redis was down after the commit). With StaleAfter at
	// its one-minute default the sweep would wait; a service with none does not.
	svc, err := delivery.NewService(delivery.Deps{
		Workspaces: w.store, Attempts: w.store, Deliveries: w.store, Integrations: w.store, Queue: w.enq,
		Webhook: inbox.New(), Inbox: inbox.New(), URLs: noURLs{}, Changes: noAnnouncements{}, Clock: clockAt{time.Now().Add(2 * time.Minute)},
		Log: slog.New(slog.DiscardHandler),
	}, delivery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := newTestLogger()
	stop := runSweeper(t, NewSweeper("deliveries", svc, time.Hour, logger))
	defer stop()
	select {
	case id := <-delivered:
		if id != d.ID {
			t.Fatalf("delivered %s, want %s", id, d.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sweeper did not re-drive the lost delivery")
	}
	deliveredEventually(t, w.store, ws.ID, d.ID)
}

type clockAt struct{ t time.Time }

func (c clockAt) Now() time.Time { return c.t }

type noURLs struct{}

func (noURLs) CheckReceiverURL(string, string) (string, error) { return "", errors.New("not used") }

func deliveredEventually(t *testing.T, store *postgres.Store, workspaceID, id string) {
	t.Helper()
	eventually(t, "delivery "+id+" to be DELIVERED", func() bool {
		d, _, err := store.GetDelivery(context.Background(), workspaceID, id)
		return err == nil && d.Status == domain.DeliveryDelivered
	})
}

// onlyTaskIn waits until list returns exactly one task of queue.
func onlyTaskIn(t *testing.T, _ *asynq.Inspector, queue string, list func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error)) *asynq.TaskInfo {
	t.Helper()
	var task *asynq.TaskInfo
	eventually(t, "one task in "+queue, func() bool {
		tasks, err := list(queue)
		if err != nil || len(tasks) != 1 {
			return false
		}
		task = tasks[0]
		return true
	})
	return task
}

// noAnnouncements is a WorkspaceNotifier for tests that change no settings.
type noAnnouncements struct{}

func (noAnnouncements) WorkspaceChanged(context.Context, string) error { return nil }
