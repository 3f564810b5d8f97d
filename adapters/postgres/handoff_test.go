package postgres_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// outboxRow is what these tests read back of the outbox.
type outboxRow struct {
	ID             string
	Target         string
	EventType      string
	ConversationID string
	Status         string
	Payload        []byte
}

func outboxOf(t *testing.T, db *gorm.DB, workspaceID string) []outboxRow {
	t.Helper()
	var rows []outboxRow
	if err := db.Raw(`SELECT id, target, event_type, conversation_id, status, payload FROM outbox
		WHERE workspace_id = ? ORDER BY created_at, id`, workspaceID).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

func outboxIDs(rows []outboxRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

func statusChange(conv domain.Conversation, to domain.ConversationStatus, at time.Time, deliveries ...domain.Delivery) domain.StatusChange {
	next := conv
	next.Status = to
	return domain.StatusChange{
		WorkspaceID: conv.WorkspaceID, ConversationID: conv.ID, To: to,
		Notice: domain.NewStatusNotice(next, to, "", at), Deliveries: deliveries,
	}
}

func TestChangeStatus(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	db, store, ws, conv := f.db, f.store, f.ws, f.conv
	ctx := ctxT(t)
	if _, _, err := store.AppendMessage(ctx, newMessage(ws.ID, conv.ID, domain.RoleUser, "My lamp flickers", t0.Add(time.Second)), ""); err != nil {
		t.Fatal(err)
	}

	// AI -> HANDOFF_REQUESTED with a contact and a delivery: all of it.
	at := t0.Add(time.Minute)
	handoff := domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, conv, at)
	handoff.Contact = &domain.HandoffContact{Name: "Ada", Email: "ada@example.com", Note: "call me"}
	change := statusChange(conv, domain.StatusHandoffRequested, at, handoff)
	change.Contact = handoff.Contact
	got, changed, err := store.ChangeStatus(ctx, change)
	if err != nil || !changed {
		t.Fatalf("ChangeStatus = %v, %v", changed, err)
	}
	if got.Status != domain.StatusHandoffRequested || got.ContactName != "Ada" || got.ContactEmail != "ada@example.com" ||
		got.MessageCount != 2 || got.LastMessage != "My lamp flickers" || !got.LastActivityAt.Equal(micro(at)) ||
		got.AgentSlug != "support" || got.WorkspaceID != ws.ID || !got.CreatedAt.Equal(micro(t0)) {
		t.Errorf("returned conversation %+v", got)
	}
	if read, err := store.GetConversation(ctx, ws.ID, conv.ID); err != nil || read != got {
		t.Errorf("GetConversation = %+v, %v; want what ChangeStatus returned %+v", read, err, got)
	}
	msgs, err := store.RecentMessages(ctx, ws.ID, conv.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	notice := msgs[len(msgs)-1]
	if len(msgs) != 2 || notice.ID != change.Notice.ID || notice.Role != domain.RoleSystem || notice.Status != domain.StatusHandoffRequested ||
		notice.Content != change.Notice.Content || !notice.CreatedAt.Equal(micro(at)) {
		t.Errorf("messages %+v, want the USER message then the notice", msgs)
	}
	rows := outboxOf(t, db, ws.ID)
	if len(rows) != 1 || rows[0].ID != handoff.ID || rows[0].Target != "helpdesk" || rows[0].EventType != domain.EventHandoffRequested ||
		rows[0].ConversationID != conv.ID || rows[0].Status != "PENDING" {
		t.Fatalf("outbox %+v", rows)
	}

	// The same move again does not apply: nothing is written, and the
	// conversation comes back as it is.
	again := statusChange(got, domain.StatusHandoffRequested, at.Add(time.Second),
		domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, conv, at))
	now, changed, err := store.ChangeStatus(ctx, again)
	if err != nil || changed || now != got {
		t.Fatalf("repeat = %+v, %v, %v; want unchanged %+v", now, changed, err, got)
	}
	// From narrows the move: HANDOFF_REQUESTED -> HUMAN is allowed, but not
	// when the caller decided it for an AI conversation.
	narrowed := statusChange(got, domain.StatusHuman, at.Add(time.Second), domain.NewDelivery(domain.TargetEvents, domain.EventMessageCreated, conv, at))
	narrowed.From = []domain.ConversationStatus{domain.StatusAI}
	if _, changed, err := store.ChangeStatus(ctx, narrowed); err != nil || changed {
		t.Fatalf("narrowed = %v, %v; want no change", changed, err)
	}
	if n, _ := store.RecentMessages(ctx, ws.ID, conv.ID, 10); len(n) != 2 || len(outboxOf(t, db, ws.ID)) != 1 {
		t.Fatalf("a change that did not apply wrote %d messages and %d deliveries", len(n), len(outboxOf(t, db, ws.ID)))
	}

	// An empty contact keeps the stored one.
	resolve := statusChange(got, domain.StatusResolved, at.Add(2*time.Second))
	resolve.Contact = &domain.HandoffContact{}
	if got, changed, err = store.ChangeStatus(ctx, resolve); err != nil || !changed || got.ContactName != "Ada" || got.Status != domain.StatusResolved {
		t.Fatalf("resolve = %+v, %v, %v", got, changed, err)
	}

	// Another workspace, or no such conversation: not found, nothing written.
	other, _, _ := newWorkspace(t, store, domain.PlanStandard)
	foreign := statusChange(got, domain.StatusAI, at.Add(3*time.Second), domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffResolved, got, at))
	foreign.WorkspaceID = other.ID
	if _, _, err := store.ChangeStatus(ctx, foreign); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("foreign workspace: err = %v, want not found", err)
	}
	unknown := statusChange(got, domain.StatusAI, at, domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffResolved, got, at))
	unknown.ConversationID = domain.NewID(domain.PrefixSession)
	if _, _, err := store.ChangeStatus(ctx, unknown); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unknown conversation: err = %v, want not found", err)
	}
	if rows := outboxOf(t, db, other.ID); len(rows) != 0 || len(outboxOf(t, db, ws.ID)) != 1 {
		t.Errorf("refused changes wrote deliveries")
	}
	if c, _ := store.GetConversation(ctx, ws.ID, conv.ID); c.Status != domain.StatusResolved {
		t.Errorf("status %s after refused changes, want RESOLVED", c.Status)
	}
}

// A change and its deliveries are one transaction: a delivery that cannot
// be written undoes the change and its notice.
func TestChangeStatusIsAtomic(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	db, store, ws, conv := f.db, f.store, f.ws, f.conv
	ctx := ctxT(t)

	ok := domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, conv, t0)
	dup := ok // the same id twice: the second insert fails
	if _, _, err := store.ChangeStatus(ctx, statusChange(conv, domain.StatusHandoffRequested, t0, ok, dup)); err == nil {
		t.Fatal("ChangeStatus with a failing delivery succeeded")
	}
	got, err := store.GetConversation(ctx, ws.ID, conv.ID)
	if err != nil || got.Status != domain.StatusAI || got.MessageCount != 0 {
		t.Fatalf("conversation %+v, %v; want it untouched", got, err)
	}
	if msgs, _ := store.RecentMessages(ctx, ws.ID, conv.ID, 10); len(msgs) != 0 {
		t.Errorf("the notice was kept: %+v", msgs)
	}
	if rows := outboxOf(t, db, ws.ID); len(rows) != 0 {
		t.Errorf("outbox %+v, want nothing", rows)
	}
}

// Concurrent requests for the same move: exactly one applies, so exactly
// one notice and one delivery are written.
func TestChangeStatusConcurrent(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	db, store, ws, conv := f.db, f.store, f.ws, f.conv
	ctx := ctxT(t)

	const n = 8
	var wg sync.WaitGroup
	changed := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			d := domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, conv, t0)
			_, changed[i], errs[i] = store.ChangeStatus(ctx, statusChange(conv, domain.StatusHandoffRequested, t0, d))
		})
	}
	wg.Wait()
	wins := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if changed[i] {
			wins++
		}
	}
	msgs, _ := store.RecentMessages(ctx, ws.ID, conv.ID, 100)
	if wins != 1 || len(msgs) != 1 || len(outboxOf(t, db, ws.ID)) != 1 {
		t.Errorf("%d changes applied, %d notices, %d deliveries; want 1 each", wins, len(msgs), len(outboxOf(t, db, ws.ID)))
	}
}

func TestAppendMessageWithDeliveries(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	db, store, ws, conv := f.db, f.store, f.ws, f.conv
	ctx := ctxT(t)
	conv.Status = domain.StatusHuman

	msg := newMessage(ws.ID, conv.ID, domain.RoleUser, "Are you there?", t0.Add(time.Second))
	msg.InboundEventID = domain.NewID(domain.PrefixInboundEvent)
	first := domain.MessageDeliveries(&domain.Workspace{ID: ws.ID, EventsURL: "https://hooks.example/e"}, conv, msg, t0)
	if len(first) != 2 {
		t.Fatalf("deliveries %+v", first)
	}
	stored, created, err := store.AppendMessage(ctx, msg, "", first...)
	if err != nil || !created || stored.ID != msg.ID {
		t.Fatalf("AppendMessage = %+v, %v, %v", stored, created, err)
	}
	rows := outboxOf(t, db, ws.ID)
	want := []string{first[0].ID, first[1].ID}
	slices.Sort(want)
	got := outboxIDs(rows)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("outbox %v, want %v", got, want)
	}
	for _, r := range rows {
		if r.EventType != domain.EventMessageCreated || r.ConversationID != conv.ID {
			t.Errorf("row %+v", r)
		}
	}

	// A retry of the same inbound event stores nothing, deliveries included.
	retry := newMessage(ws.ID, conv.ID, domain.RoleUser, "Are you there?", t0.Add(2*time.Second))
	retry.InboundEventID = msg.InboundEventID
	again := domain.MessageDeliveries(&domain.Workspace{ID: ws.ID}, conv, retry, t0)
	if _, created, err := store.AppendMessage(ctx, retry, "", again...); err != nil || created {
		t.Fatalf("retry = %v, %v; want not created", created, err)
	}
	if rows := outboxOf(t, db, ws.ID); len(rows) != 2 {
		t.Errorf("outbox has %d rows after a retry, want 2", len(rows))
	}

	// A message that cannot be stored writes no delivery either.
	other, _, _ := newWorkspace(t, store, domain.PlanStandard)
	foreign := newMessage(other.ID, conv.ID, domain.RoleUser, "sneaky", t0)
	d := domain.NewDelivery(domain.TargetHelpdesk, domain.EventMessageCreated, domain.Conversation{ID: conv.ID, WorkspaceID: other.ID}, t0)
	if _, _, err := store.AppendMessage(ctx, foreign, "", d); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("foreign append: err = %v, want not found", err)
	}
	if rows := outboxOf(t, db, other.ID); len(rows) != 0 {
		t.Errorf("outbox of the other workspace %+v", rows)
	}
}

func TestStartConversationWithDeliveries(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	ws.EventsURL = "https://hooks.example/e"
	agent := newAgent(t, store, ws.ID, "support", t0)

	conv := domain.NewConversation(ws.ID, &agent, "", t0)
	first := newMessage(ws.ID, conv.ID, domain.RoleUser, "Hello", t0)
	deliveries := append(domain.ConversationDeliveries(&ws, conv, t0), domain.MessageDeliveries(&ws, conv, first, t0)...)
	if _, err := store.StartConversation(ctx, &conv, []domain.Message{first}, deliveries...); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range outboxOf(t, db, ws.ID) {
		types = append(types, r.EventType)
	}
	slices.Sort(types)
	if !slices.Equal(types, []string{domain.EventConversationCreated, domain.EventMessageCreated}) {
		t.Errorf("outbox types %v", types)
	}

	// A conversation that cannot be started writes no delivery.
	bad := domain.NewConversation(ws.ID, &domain.Agent{ID: domain.NewID(domain.PrefixAgent), Slug: "ghost"}, "", t0)
	d := domain.ConversationDeliveries(&ws, bad, t0)
	if _, err := store.StartConversation(ctx, &bad, []domain.Message{newMessage(ws.ID, bad.ID, domain.RoleUser, "x", t0)}, d...); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("err = %v, want not found", err)
	}
	if n := len(outboxOf(t, db, ws.ID)); n != 2 {
		t.Errorf("outbox has %d rows, want 2", n)
	}

	// A conversation opened without a message (v1 sessions) reports itself
	// the same way, and not at all when it cannot be created.
	opened := domain.NewConversation(ws.ID, &agent, "", t0)
	if err := store.CreateConversation(ctx, &opened, domain.ConversationDeliveries(&ws, opened, t0)...); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateConversation(ctx, &bad, domain.ConversationDeliveries(&ws, bad, t0)...); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("err = %v, want not found", err)
	}
	if err := store.CreateConversation(ctx, &opened, domain.ConversationDeliveries(&ws, opened, t0)...); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("same id again: err = %v, want conflict", err)
	}
	rows := outboxOf(t, db, ws.ID)
	created := 0
	for _, r := range rows {
		if r.ConversationID == opened.ID && r.EventType == domain.EventConversationCreated {
			created++
		}
	}
	if len(rows) != 3 || created != 1 {
		t.Errorf("outbox %+v, want one more row: the conversation.created of the opened conversation", rows)
	}
}

// An append decided under one state writes nothing once the conversation is
// in another, and a change decided on a transcript writes nothing once a
// message was appended after it: the two halves of "a message racing a
// handoff is never lost to the helpdesk".
func TestAppendAndChangeStatusConditions(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	db, store, ws, conv := f.db, f.store, f.ws, f.conv
	ctx := ctxT(t)

	empty, err := store.HandoffTranscript(ctx, ws.ID, conv.ID, 10)
	if err != nil || len(empty.Messages) != 0 || empty.MessageCount != 0 {
		t.Fatalf("HandoffTranscript of an empty conversation = %+v, %v", empty, err)
	}
	first := newMessage(ws.ID, conv.ID, domain.RoleUser, "first", t0.Add(time.Second))
	if _, created, err := store.AppendMessage(ctx, first, domain.StatusAI); err != nil || !created {
		t.Fatalf("append while AI = %v, %v", created, err)
	}
	transcript, err := store.HandoffTranscript(ctx, ws.ID, conv.ID, 10)
	if err != nil || len(transcript.Messages) != 1 || transcript.Messages[0].ID != first.ID || transcript.MessageCount != 1 {
		t.Fatalf("HandoffTranscript = %+v, %v", transcript, err)
	}
	if _, err := store.HandoffTranscript(ctx, domain.NewID(domain.PrefixWorkspace), conv.ID, 10); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("HandoffTranscript of another workspace = %v, want not found", err)
	}

	// A message lands after the transcript was read: the change does not apply.
	second := newMessage(ws.ID, conv.ID, domain.RoleUser, "second", t0.Add(2*time.Second))
	if _, _, err := store.AppendMessage(ctx, second, ""); err != nil {
		t.Fatal(err)
	}
	stale := statusChange(conv, domain.StatusHandoffRequested, t0.Add(3*time.Second),
		domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, conv, t0))
	stale.MessageCount = &transcript.MessageCount
	if now, changed, err := store.ChangeStatus(ctx, stale); err != nil || changed || now.Status != domain.StatusAI || now.MessageCount != 2 {
		t.Fatalf("change on a stale transcript = %+v, %v, %v; want no change", now, changed, err)
	}
	if rows := outboxOf(t, db, ws.ID); len(rows) != 0 {
		t.Fatalf("a change that did not apply wrote deliveries %+v", rows)
	}
	fresh, _ := store.HandoffTranscript(ctx, ws.ID, conv.ID, 10)
	current := statusChange(conv, domain.StatusHandoffRequested, t0.Add(3*time.Second))
	current.MessageCount = &fresh.MessageCount
	if _, changed, err := store.ChangeStatus(ctx, current); err != nil || !changed {
		t.Fatalf("change on a current transcript = %v, %v", changed, err)
	}

	// The conversation left AI: an append decided under AI writes nothing.
	late := newMessage(ws.ID, conv.ID, domain.RoleUser, "late", t0.Add(4*time.Second))
	d := domain.NewDelivery(domain.TargetEvents, domain.EventMessageCreated, conv, t0)
	if _, _, err := store.AppendMessage(ctx, late, domain.StatusAI, d); !errors.Is(err, domain.ErrStatusChanged) || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("append under a stale state = %v, want ErrStatusChanged (a conflict)", err)
	}
	if msgs, _ := store.RecentMessages(ctx, ws.ID, conv.ID, 10); len(msgs) != 3 || len(outboxOf(t, db, ws.ID)) != 0 {
		t.Fatalf("the refused append wrote: %d messages, %d deliveries", len(msgs), len(outboxOf(t, db, ws.ID)))
	}
	if _, created, err := store.AppendMessage(ctx, late, domain.StatusHandoffRequested, d); err != nil || !created {
		t.Fatalf("append under the current state = %v, %v", created, err)
	}
	if _, _, err := store.AppendMessage(ctx, newMessage(ws.ID, domain.NewID(domain.PrefixSession), domain.RoleUser, "x", t0), domain.StatusAI); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("append to an unknown conversation = %v, want not found", err)
	}
}

// Users keep writing while a handoff is requested, as the engine and the
// handoff use case do (read, decide, write under the state read, decide
// again when refused): every user message ends up either in the handoff's
// transcript or appended under HANDOFF_REQUESTED (where it is delivered on
// its own), never in neither.
func TestMessagesRacingAHandoffReachTheHelpdesk(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	store, ws, agent := f.store, f.ws, f.agent
	ctx := ctxT(t)
	for round := range 20 {
		conv := newConversation(t, store, ws.ID, agent, t0)
		if _, _, err := store.AppendMessage(ctx, newMessage(ws.ID, conv.ID, domain.RoleUser, "hello", t0), ""); err != nil {
			t.Fatal(err)
		}
		var (
			wg          sync.WaitGroup
			underAI     []string // appended while AI: must be in the transcript
			inHandoff   []string // appended under HANDOFF_REQUESTED: delivered on their own
			transcript  []string
			handoffErr  error
			appendErrs  []error
			messageTime = t0.Add(time.Second)
		)
		wg.Go(func() {
			for i := range 5 {
				m := newMessage(ws.ID, conv.ID, domain.RoleUser, "racing", messageTime.Add(time.Duration(i)*time.Millisecond))
				state := domain.StatusAI
				for {
					_, _, err := store.AppendMessage(ctx, m, state)
					if errors.Is(err, domain.ErrStatusChanged) {
						read, err := store.GetConversation(ctx, ws.ID, conv.ID)
						if err != nil {
							appendErrs = append(appendErrs, err)
							return
						}
						state = read.Status
						continue
					}
					if err != nil {
						appendErrs = append(appendErrs, err)
						return
					}
					if state == domain.StatusAI {
						underAI = append(underAI, m.ID)
					} else {
						inHandoff = append(inHandoff, m.ID)
					}
					break
				}
			}
		})
		wg.Go(func() {
			for {
				read, err := store.HandoffTranscript(ctx, ws.ID, conv.ID, 100)
				if err != nil {
					handoffErr = err
					return
				}
				change := statusChange(conv, domain.StatusHandoffRequested, messageTime)
				change.From = []domain.ConversationStatus{domain.StatusAI}
				change.MessageCount = &read.MessageCount
				_, changed, err := store.ChangeStatus(ctx, change)
				if err != nil {
					handoffErr = err
					return
				}
				if changed {
					for _, m := range read.Messages {
						transcript = append(transcript, m.ID)
					}
					return
				}
			}
		})
		wg.Wait()
		if handoffErr != nil || len(appendErrs) > 0 {
			t.Fatalf("round %d: handoff %v, appends %v", round, handoffErr, appendErrs)
		}
		if len(underAI)+len(inHandoff) != 5 {
			t.Fatalf("round %d: %d under AI + %d in handoff, want 5 messages", round, len(underAI), len(inHandoff))
		}
		for _, id := range underAI {
			if !slices.Contains(transcript, id) {
				t.Fatalf("round %d: message %s was appended while AI but is not in the handoff's transcript %v", round, id, transcript)
			}
		}
		for _, id := range inHandoff {
			if slices.Contains(transcript, id) {
				t.Fatalf("round %d: message %s is both in the transcript and delivered on its own", round, id)
			}
		}
	}
}

// A reply's outcome is stored with it, for resumed streams and history.
func TestReplyOutcomeRoundTrips(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	reply := newMessage(f.ws.ID, f.conv.ID, domain.RoleAssistant, "Sorry.", t0.Add(time.Second))
	reply.FallbackReason, reply.OfferHandoff = domain.FallbackNoKnowledge, true
	plain := newMessage(f.ws.ID, f.conv.ID, domain.RoleAssistant, "Thirty days.", t0.Add(2*time.Second))
	for _, m := range []domain.Message{reply, plain} {
		if _, _, err := f.store.AppendMessage(ctx, m, ""); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := f.store.RecentMessages(ctx, f.ws.ID, f.conv.ID, 10)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("RecentMessages = %d, %v", len(msgs), err)
	}
	if msgs[0].FallbackReason != domain.FallbackNoKnowledge || !msgs[0].OfferHandoff || msgs[1].FallbackReason != "" || msgs[1].OfferHandoff {
		t.Errorf("stored outcomes %q/%v and %q/%v", msgs[0].FallbackReason, msgs[0].OfferHandoff, msgs[1].FallbackReason, msgs[1].OfferHandoff)
	}
}
