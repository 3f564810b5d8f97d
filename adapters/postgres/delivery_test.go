package postgres_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// newDelivery builds a delivery about a made-up conversation of ws, with a
// full snapshot, created at `at`.
func newDelivery(ws domain.Workspace, target domain.DeliveryTarget, typ string, at time.Time) domain.Delivery {
	conv := domain.Conversation{
		ID: domain.NewID(domain.PrefixSession), WorkspaceID: ws.ID, AgentID: domain.NewID(domain.PrefixAgent), AgentSlug: "support",
		Channel: domain.ChannelChat, Status: domain.StatusHandoffRequested, ContactName: "Ada", ContactEmail: "ada@example.com",
		CreatedAt: at.Add(-time.Minute),
	}
	d := domain.NewDelivery(target, typ, conv, at)
	msg := newMessage(ws.ID, conv.ID, domain.RoleUser, "I need a person", at.Add(-time.Second))
	d.Message = &msg
	d.Contact = &domain.HandoffContact{Name: "Ada", Email: "ada@example.com", Note: "urgent"}
	d.Transcript = []domain.Message{newMessage(ws.ID, conv.ID, domain.RoleUser, "hello", at.Add(-2*time.Second)), msg}
	return d
}

func insert(t *testing.T, store *postgres.Store, ds ...domain.Delivery) {
	t.Helper()
	if err := store.InsertDeliveries(ctxT(t), ds...); err != nil {
		t.Fatalf("InsertDeliveries: %v", err)
	}
}

func TestDeliveryClaimFinishAndLog(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	d := newDelivery(ws, domain.TargetHelpdesk, domain.EventHandoffRequested, t0)
	insert(t, store, d)

	// Not due yet: nothing claimed, the row comes back as stored.
	got, ok, err := store.ClaimDelivery(ctx, d.ID, t0.Add(-time.Second), t0.Add(time.Minute))
	if err != nil || ok {
		t.Fatalf("claim before due = ok %v, err %v; want not claimed", ok, err)
	}
	if got.ID != d.ID || got.Attempts != 0 || got.Status != domain.DeliveryPending {
		t.Fatalf("unclaimed delivery = %+v", got)
	}

	// Due: one attempt counted, held until the lease ends, snapshot intact.
	lease := t0.Add(30 * time.Second)
	claimed, ok, err := store.ClaimDelivery(ctx, d.ID, t0, lease)
	if err != nil || !ok {
		t.Fatalf("claim = ok %v, err %v", ok, err)
	}
	if claimed.Attempts != 1 || !claimed.NextAttemptAt.Equal(micro(lease)) {
		t.Fatalf("claimed attempts %d, next %v; want 1, %v", claimed.Attempts, claimed.NextAttemptAt, micro(lease))
	}
	if claimed.Conversation.ID != d.ConversationID || claimed.Conversation.AgentSlug != "support" ||
		claimed.Conversation.WorkspaceID != ws.ID || claimed.Conversation.ContactEmail != "ada@example.com" ||
		claimed.Message == nil || claimed.Message.Content != "I need a person" || !claimed.Message.CreatedAt.Equal(t0.Add(-time.Second)) ||
		!reflect.DeepEqual(claimed.Contact, d.Contact) || len(claimed.Transcript) != 2 || claimed.Transcript[0].Content != "hello" {
		t.Fatalf("claimed snapshot = %+v", claimed)
	}
	// Held: another worker cannot claim it before the lease ends.
	if _, ok, err := store.ClaimDelivery(ctx, d.ID, t0.Add(time.Second), t0.Add(time.Hour)); err != nil || ok {
		t.Fatalf("second claim during the lease = ok %v, err %v; want not claimed", ok, err)
	}

	// A transient failure: logged, retried later.
	retryAt := t0.Add(time.Minute)
	applied, err := store.FinishAttempt(ctx, claimed,
		&domain.DeliveryAttempt{Attempt: 1, At: t0, StatusCode: 503, Error: "receiver answered 503", Duration: 1500 * time.Millisecond},
		ports.DeliveryOutcome{Status: domain.DeliveryPending, NextAttemptAt: retryAt, LastError: "receiver answered 503", At: t0})
	if err != nil || !applied {
		t.Fatalf("FinishAttempt(retry) = %v, %v", applied, err)
	}

	// Attempt 2 is claimed; a late outcome of attempt 1 no longer applies,
	// but its log entry is kept.
	second, ok, err := store.ClaimDelivery(ctx, d.ID, retryAt, retryAt.Add(30*time.Second))
	if err != nil || !ok || second.Attempts != 2 {
		t.Fatalf("claim 2 = %+v, ok %v, err %v", second, ok, err)
	}
	applied, err = store.FinishAttempt(ctx, claimed, nil,
		ports.DeliveryOutcome{Status: domain.DeliveryFailed, LastError: "late", At: retryAt})
	if err != nil || applied {
		t.Fatalf("stale failure applied = %v, err %v; want not applied", applied, err)
	}
	// Success applies even from a stale attempt: the receiver has it.
	applied, err = store.FinishAttempt(ctx, claimed,
		&domain.DeliveryAttempt{Attempt: 1, At: t0, StatusCode: 503, Error: "duplicate log entry", Duration: time.Second},
		ports.DeliveryOutcome{Status: domain.DeliveryDelivered, At: retryAt.Add(time.Second)})
	if err != nil || !applied {
		t.Fatalf("success = %v, %v", applied, err)
	}
	applied, err = store.FinishAttempt(ctx, second,
		&domain.DeliveryAttempt{Attempt: 2, At: retryAt, StatusCode: 200, Duration: 20 * time.Millisecond},
		ports.DeliveryOutcome{Status: domain.DeliveryFailed, LastError: "after success", At: retryAt})
	if err != nil || applied {
		t.Fatalf("outcome after DELIVERED applied = %v, err %v", applied, err)
	}
	if _, ok, err := store.ClaimDelivery(ctx, d.ID, t0.Add(24*time.Hour), t0.Add(25*time.Hour)); err != nil || ok {
		t.Fatalf("claim of a DELIVERED delivery = ok %v, err %v", ok, err)
	}

	stored, attempts, err := store.GetDelivery(ctx, ws.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != domain.DeliveryDelivered || !stored.DeliveredAt.Equal(micro(retryAt.Add(time.Second))) || stored.Attempts != 2 || stored.LastError != "" {
		t.Fatalf("stored = %+v", stored)
	}
	want := []domain.DeliveryAttempt{
		{DeliveryID: d.ID, Attempt: 1, At: micro(t0), StatusCode: 503, Error: "receiver answered 503", Duration: 1500 * time.Millisecond},
		{DeliveryID: d.ID, Attempt: 2, At: micro(retryAt), StatusCode: 200, Duration: 20 * time.Millisecond},
	}
	if !reflect.DeepEqual(attempts, want) {
		t.Fatalf("attempts = %+v\nwant %+v", attempts, want)
	}
}

func TestDeliveryNotFound(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)
	d := newDelivery(wsA, domain.TargetEvents, domain.EventConversationCreated, t0)
	insert(t, store, d)
	unknown := domain.Delivery{ID: domain.NewID(domain.PrefixDelivery), Attempts: 1}

	checks := map[string]error{}
	_, _, checks["claim unknown"] = store.ClaimDelivery(ctx, unknown.ID, t0, t0)
	_, checks["finish unknown with attempt"] = store.FinishAttempt(ctx, unknown, &domain.DeliveryAttempt{Attempt: 1, At: t0},
		ports.DeliveryOutcome{Status: domain.DeliveryFailed, At: t0})
	_, checks["finish unknown"] = store.FinishAttempt(ctx, unknown, nil, ports.DeliveryOutcome{Status: domain.DeliveryFailed, At: t0})
	_, _, checks["get of another workspace"] = store.GetDelivery(ctx, wsB.ID, d.ID)
	_, checks["redrive of another workspace"] = store.RedriveDelivery(ctx, wsB.ID, d.ID, t0)
	_, checks["redrive unknown"] = store.RedriveDelivery(ctx, wsA.ID, unknown.ID, t0)
	_, checks["integrations of an unknown workspace"] = store.UpdateIntegrations(ctx, domain.NewID(domain.PrefixWorkspace), ports.IntegrationsPatch{}, t0)
	for name, err := range checks {
		if !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := store.FinishAttempt(ctx, d, nil, ports.DeliveryOutcome{Status: "LOST", At: t0}); err == nil || errors.Is(err, domain.ErrNotFound) {
		t.Errorf("an invalid status was accepted or misreported: %v", err)
	}
}

func TestListDeliveriesPagesFiltersAndScopes(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)

	var all []domain.Delivery
	for i := range 25 {
		target, typ := domain.TargetEvents, domain.EventMessageCreated
		if i%3 == 0 {
			target, typ = domain.TargetHelpdesk, domain.EventHandoffRequested
		}
		// Pairs share a creation time, so the id breaks ties.
		d := newDelivery(wsA, target, typ, t0.Add(time.Duration(i/2)*time.Second))
		all = append(all, d)
	}
	insert(t, store, all...)
	insert(t, store, newDelivery(wsB, domain.TargetHelpdesk, domain.EventHandoffRequested, t0.Add(time.Hour)))
	// Fail one so the status filter has something to find.
	failed := all[3]
	claimed, ok, err := store.ClaimDelivery(ctx, failed.ID, t0.Add(time.Hour), t0.Add(2*time.Hour))
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if _, err := store.FinishAttempt(ctx, claimed, &domain.DeliveryAttempt{Attempt: 1, At: t0, StatusCode: 410, Error: "gone"},
		ports.DeliveryOutcome{Status: domain.DeliveryFailed, LastError: "gone", At: t0}); err != nil {
		t.Fatal(err)
	}

	wantOrder := sortedIDs(all, func(d domain.Delivery) string { return d.ID }, func(a, b domain.Delivery) bool {
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.ID > b.ID
	})
	var got []string
	page := domain.PageRequest{Limit: 10}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		p, err := store.ListDeliveries(ctx, wsA.ID, domain.DeliveryFilter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Items {
			if d.WorkspaceID != wsA.ID || d.Message != nil || d.Transcript != nil {
				t.Fatalf("listed %+v: another workspace's, or with its snapshot", d)
			}
			got = append(got, d.ID)
		}
		if !p.HasMore {
			break
		}
		page.After = p.Next
	}
	if !slices.Equal(got, wantOrder) {
		t.Fatalf("pages = %v\nwant    %v", got, wantOrder)
	}

	count := func(f domain.DeliveryFilter) int {
		p, err := store.ListDeliveries(ctx, wsA.ID, f, domain.PageRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Items {
			if (f.Target != "" && d.Target != f.Target) || (f.Status != "" && d.Status != f.Status) || (f.Type != "" && d.Type != f.Type) {
				t.Fatalf("filter %+v listed %+v", f, d)
			}
		}
		return len(p.Items)
	}
	for _, tt := range []struct {
		filter domain.DeliveryFilter
		want   int
	}{
		{domain.DeliveryFilter{Target: domain.TargetHelpdesk}, 9},
		{domain.DeliveryFilter{Target: domain.TargetEvents}, 16},
		{domain.DeliveryFilter{Type: domain.EventMessageCreated}, 16},
		{domain.DeliveryFilter{Status: domain.DeliveryFailed}, 1},
		{domain.DeliveryFilter{Status: domain.DeliveryPending, Target: domain.TargetHelpdesk}, 8},
		{domain.DeliveryFilter{Status: domain.DeliveryDelivered}, 0},
	} {
		if n := count(tt.filter); n != tt.want {
			t.Errorf("filter %+v: %d deliveries, want %d", tt.filter, n, tt.want)
		}
	}
	if p, err := store.ListDeliveries(ctx, wsB.ID, domain.DeliveryFilter{}, domain.PageRequest{}); err != nil || len(p.Items) != 1 || p.Items[0].WorkspaceID != wsB.ID {
		t.Fatalf("workspace B sees %+v, %v", p.Items, err)
	}

	// Redrive: only a FAILED delivery, only in its workspace.
	if _, err := store.RedriveDelivery(ctx, wsA.ID, all[0].ID, t0); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("redrive of a PENDING delivery: %v, want ErrConflict", err)
	}
	redriven, err := store.RedriveDelivery(ctx, wsA.ID, failed.ID, t0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if redriven.Status != domain.DeliveryPending || redriven.Attempts != 1 || !redriven.NextAttemptAt.Equal(micro(t0.Add(3*time.Hour))) {
		t.Fatalf("redriven = %+v", redriven)
	}
}

func TestListDueDeliveries(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)
	early := newDelivery(wsB, domain.TargetEvents, domain.EventConversationCreated, t0)
	late := newDelivery(wsA, domain.TargetHelpdesk, domain.EventHandoffRequested, t0.Add(time.Minute))
	future := newDelivery(wsA, domain.TargetHelpdesk, domain.EventHandoffResolved, t0.Add(time.Hour))
	done := newDelivery(wsA, domain.TargetEvents, domain.EventMessageCreated, t0)
	insert(t, store, late, future, early, done)
	claimed, _, err := store.ClaimDelivery(ctx, done.ID, t0, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.FinishAttempt(ctx, claimed, nil, ports.DeliveryOutcome{Status: domain.DeliveryDelivered, At: t0}); err != nil {
		t.Fatal(err)
	}

	due, err := store.ListDueDeliveries(ctx, t0.Add(30*time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range due {
		ids = append(ids, d.ID)
	}
	if want := []string{early.ID, late.ID}; !slices.Equal(ids, want) {
		t.Fatalf("due = %v, want %v", ids, want)
	}
	if due[1].Target != domain.TargetHelpdesk || due[1].WorkspaceID != wsA.ID || due[1].Attempts != 0 {
		t.Fatalf("due[1] = %+v", due[1])
	}
	if one, err := store.ListDueDeliveries(ctx, t0.Add(30*time.Minute), 1); err != nil || len(one) != 1 || one[0].ID != early.ID {
		t.Fatalf("limit 1 = %v, %v", one, err)
	}
}

func TestUpdateIntegrations(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	str := func(s string) *string { return &s }

	first, second := domain.NewSigningSecret(), domain.NewSigningSecret()
	got, err := store.UpdateIntegrations(ctx, ws.ID, ports.IntegrationsPatch{
		HelpdeskURL: str("https://desk.example.com/hook"), SigningSecretIfNone: first,
	}, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.HelpdeskURL != "https://desk.example.com/hook" || got.EventsURL != "" || got.SigningSecret != first ||
		!got.UpdatedAt.Equal(micro(t0.Add(time.Minute))) || got.WebhookSecret != ws.WebhookSecret || got.Plan != ws.Plan {
		t.Fatalf("after first configuration: %+v", got)
	}
	// A second "first configuration" keeps the secret; the events URL is set.
	got, err = store.UpdateIntegrations(ctx, ws.ID, ports.IntegrationsPatch{EventsURL: str("https://events.example.com/in"), SigningSecretIfNone: second}, t0)
	if err != nil || got.SigningSecret != first || got.HelpdeskURL != "https://desk.example.com/hook" || got.EventsURL != "https://events.example.com/in" {
		t.Fatalf("second configuration: %+v, %v", got, err)
	}
	// Rotation replaces it; an empty URL clears one.
	got, err = store.UpdateIntegrations(ctx, ws.ID, ports.IntegrationsPatch{HelpdeskURL: str(""), SigningSecret: second}, t0)
	if err != nil || got.SigningSecret != second || got.HelpdeskURL != "" || got.EventsURL == "" || got.AutoAssign {
		t.Fatalf("rotation: %+v, %v", got, err)
	}
	// Auto-assignment is off until turned on, and stays as it is when
	// the patch does not name it.
	on, off := true, false
	if got, err = store.UpdateIntegrations(ctx, ws.ID, ports.IntegrationsPatch{AutoAssign: &on}, t0); err != nil || !got.AutoAssign {
		t.Fatalf("auto-assign on: %+v, %v", got, err)
	}
	if got, err = store.UpdateIntegrations(ctx, ws.ID, ports.IntegrationsPatch{EventsURL: str("https://events.example.com/in")}, t0); err != nil || !got.AutoAssign {
		t.Fatalf("a patch without auto-assign: %+v, %v", got, err)
	}
	read, err := store.GetWorkspace(ctx, ws.ID)
	if err != nil || !reflect.DeepEqual(read, got) {
		t.Fatalf("GetWorkspace = %+v, %v\nwant %+v", read, err, got)
	}
	// UpdateWorkspace (plans, webhook secrets) leaves the integrations alone.
	read.Plan = domain.PlanEnterprise
	read.HelpdeskURL, read.SigningSecret = "https://ignored.example.com", ""
	if err := store.UpdateWorkspace(ctx, read); err != nil {
		t.Fatal(err)
	}
	if again, err := store.GetWorkspace(ctx, ws.ID); err != nil || again.SigningSecret != second || again.HelpdeskURL != "" || again.Plan != domain.PlanEnterprise || !again.AutoAssign {
		t.Fatalf("after UpdateWorkspace: %+v, %v", again, err)
	}
	if got, err = store.UpdateIntegrations(ctx, ws.ID, ports.IntegrationsPatch{AutoAssign: &off}, t0); err != nil || got.AutoAssign {
		t.Fatalf("auto-assign off: %+v, %v", got, err)
	}
}
