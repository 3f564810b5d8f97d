package conversationtest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

var statusCases = []contractCase{
	{"ChangeStatus moves, stores the contact, the notice and the deliveries", func(t *testing.T, f *fixture) {
		f.append(t, f.msg(domain.RoleUser, "My lamp flickers", t0.Add(time.Second)))
		at := t0.Add(time.Minute)
		contact := &domain.HandoffContact{Name: "Ada", Email: "ada@example.com", Note: "call me"}
		handoff := domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, f.conv, at)
		change := statusChange(f.conv, domain.StatusHandoffRequested, at, handoff)
		change.Contact = contact
		change.Notice.AuthorName = "kept"
		got := f.move(t, change)
		// The notice counts and dates the conversation but keeps the
		// preview of what someone said.
		if got.Status != domain.StatusHandoffRequested || got.ContactName != "Ada" || got.ContactEmail != "ada@example.com" ||
			got.ContactNote != "call me" || got.MessageCount != 2 || got.LastMessage != "My lamp flickers" || got.LastActivityAt != micro(at) ||
			got.AgentSlug != "support" || got.WorkspaceID != f.ws || got.CreatedAt != micro(t0) || got.HandoffRequestedAt != micro(at) {
			t.Errorf("returned conversation %+v", got)
		}
		if read := f.get(t); read != got {
			t.Errorf("GetConversation = %+v; want what ChangeStatus returned %+v", read, got)
		}
		msgs := f.messages(t)
		want := domain.Message{ID: change.Notice.ID, WorkspaceID: f.ws, ConversationID: f.conv.ID, Role: domain.RoleSystem,
			Content: change.Notice.Content, Status: domain.StatusHandoffRequested, AuthorName: "kept", CreatedAt: micro(at)}
		if len(msgs) != 2 || !equalMessage(msgs[1], want) {
			t.Errorf("messages %+v, want the USER message then the notice %+v", msgs, want)
		}
		if f.outbox(t) != 1 {
			t.Errorf("%d deliveries, want 1", f.outbox(t))
		}

		// An empty contact keeps the stored one.
		resolve := statusChange(got, domain.StatusResolved, at.Add(time.Second))
		resolve.Contact = &domain.HandoffContact{}
		resolved := f.move(t, resolve)
		if resolved.ContactName != "Ada" || resolved.ContactEmail != "ada@example.com" || resolved.ContactNote != "call me" {
			t.Errorf("after an empty contact: %+v", resolved)
		}
		// Leaving HANDOFF_REQUESTED keeps when it was asked for.
		if resolved.HandoffRequestedAt != micro(at) {
			t.Errorf("resolved: request time %v, want %v", resolved.HandoffRequestedAt, micro(at))
		}

		// Asking again with a new note replaces the note (the latest
		// request is the one a member answers); the name and email given
		// before stay.
		again := statusChange(resolved, domain.StatusHandoffRequested, at.Add(2*time.Second))
		again.Contact = &domain.HandoffContact{Note: "after 5pm please"}
		got = f.move(t, again)
		if got.ContactName != "Ada" || got.ContactEmail != "ada@example.com" || got.ContactNote != "after 5pm please" {
			t.Errorf("after a second request with a new note: %+v", got)
		}
		// The second request is the one the conversation waits from.
		if got.HandoffRequestedAt != micro(at.Add(2*time.Second)) {
			t.Errorf("after a second request: request time %v, want %v", got.HandoffRequestedAt, micro(at.Add(2*time.Second)))
		}
		if read := f.get(t); read.ContactNote != "after 5pm please" {
			t.Errorf("GetConversation note %q after a second request", read.ContactNote)
		}
	}},

	// Undocumented: the notice is stored as a SYSTEM message of the change's
	// workspace and conversation whose Status is the change's To, whatever
	// the Notice says of them; only its id, content, author and time are
	// the Notice's.
	{"ChangeStatus stores the notice as the change's", func(t *testing.T, f *fixture) {
		change := statusChange(f.conv, domain.StatusHuman, t0)
		change.Notice.Role, change.Notice.Status, change.Notice.TokensIn = domain.RoleUser, domain.StatusResolved, 7
		f.move(t, change)
		msgs := f.messages(t)
		if len(msgs) != 1 || msgs[0].Role != domain.RoleSystem || msgs[0].Status != domain.StatusHuman || msgs[0].TokensIn != 0 {
			t.Errorf("notice %+v", msgs)
		}
	}},

	{"ChangeStatus that does not apply writes nothing and returns the conversation as it is", func(t *testing.T, f *fixture) {
		f.append(t, f.msg(domain.RoleUser, "hello", t0))
		current := f.move(t, statusChange(f.conv, domain.StatusHandoffRequested, t0.Add(time.Second)))
		stale := 0
		narrowed := statusChange(current, domain.StatusHuman, t0.Add(time.Minute), delivery(current, domain.EventMessageCreated))
		narrowed.From = []domain.ConversationStatus{domain.StatusAI}
		counted := statusChange(current, domain.StatusHuman, t0.Add(time.Minute), delivery(current, domain.EventMessageCreated))
		counted.MessageCount = &stale
		tests := map[string]domain.StatusChange{
			"the same state again":                    statusChange(current, domain.StatusHandoffRequested, t0.Add(time.Minute), delivery(current, domain.EventHandoffRequested)),
			"From narrows it":                         narrowed,
			"a message since the transcript was read": counted,
		}
		for name, change := range tests {
			got, changed, err := f.Store.ChangeStatus(f.ctx, change)
			if err != nil || changed || got != current {
				t.Errorf("%s: %+v, %v, %v; want unchanged %+v", name, got, changed, err, current)
			}
		}
		if n := len(f.messages(t)); n != 2 || f.outbox(t) != 0 {
			t.Errorf("changes that did not apply wrote %d messages and %d deliveries", n-2, f.outbox(t))
		}
		count := 2
		counted.MessageCount = &count
		if got := f.move(t, counted); got.Status != domain.StatusHuman {
			t.Errorf("a change on a current count: %+v", got)
		}
	}},

	{"ChangeStatus refuses another workspace's or an unknown conversation", func(t *testing.T, f *fixture) {
		other := f.NewWorkspace(t)
		foreign := statusChange(f.conv, domain.StatusHuman, t0, delivery(f.conv, domain.EventMessageCreated))
		foreign.WorkspaceID = other
		unknown := statusChange(f.conv, domain.StatusHuman, t0, delivery(f.conv, domain.EventMessageCreated))
		unknown.ConversationID = domain.NewID(domain.PrefixSession)
		for name, change := range map[string]domain.StatusChange{"another workspace": foreign, "unknown conversation": unknown} {
			if _, changed, err := f.Store.ChangeStatus(f.ctx, change); !errors.Is(err, domain.ErrNotFound) || changed {
				t.Errorf("%s: %v, %v; want not found", name, changed, err)
			}
		}
		if got := f.get(t); got.Status != domain.StatusAI || got.MessageCount != 0 || f.outbox(t)+f.outbox(t, other) != 0 {
			t.Errorf("refused changes wrote: %+v", got)
		}
	}},

	// A delivery that cannot be written (an id written before) undoes the
	// change and its notice.
	{"ChangeStatus is atomic with its deliveries", func(t *testing.T, f *fixture) {
		ok := domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, f.conv, t0)
		if _, _, err := f.Store.ChangeStatus(f.ctx, statusChange(f.conv, domain.StatusHandoffRequested, t0, ok, ok)); err == nil {
			t.Fatal("ChangeStatus with a failing delivery succeeded")
		}
		if got := f.get(t); got.Status != domain.StatusAI || got.MessageCount != 0 || len(f.messages(t)) != 0 || f.outbox(t) != 0 {
			t.Errorf("conversation %+v; want it untouched", got)
		}
	}},

	{"concurrent changes to one state: exactly one applies", func(t *testing.T, f *fixture) {
		const n = 8
		var wg sync.WaitGroup
		changed := make([]bool, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				d := domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, f.conv, t0)
				_, changed[i], errs[i] = f.Store.ChangeStatus(f.ctx, statusChange(f.conv, domain.StatusHandoffRequested, t0, d))
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		wins := 0
		for _, c := range changed {
			if c {
				wins++
			}
		}
		if wins != 1 || len(f.messages(t)) != 1 || f.outbox(t) != 1 {
			t.Errorf("%d changes applied, %d notices, %d deliveries; want 1 each", wins, len(f.messages(t)), f.outbox(t))
		}
	}},

	{"ChangeStatus with a message after the notice", func(t *testing.T, f *fixture) {
		reply := f.msg(domain.RoleHuman, "Hi, Marta here.", t0.Add(time.Minute))
		ws := domain.Workspace{ID: f.ws, EventsURL: "https://hooks.example/e"}
		change := statusChange(f.conv, domain.StatusHuman, t0.Add(time.Minute)).WithMessage(&ws, f.conv, reply, false)
		got := f.move(t, change)
		if got.Status != domain.StatusHuman || got.MessageCount != 2 || got.LastMessage != "Hi, Marta here." || got.LastActivityAt != micro(reply.CreatedAt) {
			t.Errorf("returned %+v", got)
		}
		if read := f.get(t); read != got {
			t.Errorf("stored %+v, returned %+v", read, got)
		}
		if r := roles(f.messages(t)); !slices.Equal(r, []domain.Role{domain.RoleSystem, domain.RoleHuman}) {
			t.Errorf("stored %v, want the notice then the reply", r)
		}
		if f.outbox(t) != len(change.Deliveries) || len(change.Deliveries) == 0 {
			t.Errorf("%d deliveries, want %d", f.outbox(t), len(change.Deliveries))
		}
	}},

	{"ChangeStatus with a message first", func(t *testing.T, f *fixture) {
		resolved := f.move(t, statusChange(f.conv, domain.StatusResolved, t0.Add(time.Second)))
		question := f.msg(domain.RoleUser, "One more thing", t0.Add(time.Minute))
		change := statusChange(resolved, domain.StatusAI, t0.Add(time.Minute))
		change.From = []domain.ConversationStatus{domain.StatusResolved}
		got := f.move(t, change.WithMessage(&domain.Workspace{ID: f.ws}, resolved, question, true))
		if got.Status != domain.StatusAI || got.MessageCount != 3 || got.LastMessage != "One more thing" {
			t.Errorf("returned %+v", got)
		}
		if r := roles(f.messages(t)); !slices.Equal(r, []domain.Role{domain.RoleSystem, domain.RoleUser, domain.RoleSystem}) {
			t.Errorf("stored %v, want resolve notice, question, reopen notice", r)
		}
	}},

	{"ChangeStatus with a message that cannot be stored stores nothing", func(t *testing.T, f *fixture) {
		existing := f.append(t, f.msg(domain.RoleUser, "hello", t0.Add(time.Second)))
		for _, first := range []bool{false, true} {
			reply := f.msg(domain.RoleHuman, "Hi", t0.Add(time.Minute))
			reply.ID = existing.ID
			conv := f.get(t)
			change := statusChange(conv, domain.StatusHuman, t0.Add(time.Minute), delivery(conv, domain.EventMessageCreated))
			if _, _, err := f.Store.ChangeStatus(f.ctx, change.WithMessage(&domain.Workspace{ID: f.ws}, conv, reply, first)); !errors.Is(err, domain.ErrConflict) {
				t.Errorf("first=%v: err = %v, want conflict", first, err)
			}
			if got := f.get(t); got.Status != domain.StatusAI || got.MessageCount != 1 || len(f.messages(t)) != 1 || f.outbox(t) != 0 {
				t.Errorf("first=%v: conversation %+v; want it untouched", first, got)
			}
		}
	}},

	{"ChangeStatus with a message first under a state that moved stores nothing", func(t *testing.T, f *fixture) {
		question := f.msg(domain.RoleUser, "One more thing", t0.Add(time.Minute))
		stale := f.conv
		stale.Status = domain.StatusResolved // as read, before someone reopened it
		change := statusChange(stale, domain.StatusAI, t0.Add(time.Minute), delivery(stale, domain.EventMessageCreated))
		change.From = []domain.ConversationStatus{domain.StatusResolved}
		got, changed, err := f.Store.ChangeStatus(f.ctx, change.WithMessage(&domain.Workspace{ID: f.ws}, stale, question, true))
		if err != nil || changed || got != f.get(t) {
			t.Errorf("ChangeStatus = %+v, %v, %v; want the conversation as it is, unchanged", got, changed, err)
		}
		if len(f.messages(t)) != 0 || f.outbox(t) != 0 {
			t.Error("a change that did not apply stored its message")
		}
	}},

	{"ChangeStatus with an inbound event's message stored before is ErrMessageExists", func(t *testing.T, f *fixture) {
		first := f.msg(domain.RoleUser, "from the CRM", t0.Add(time.Second))
		first.InboundEventID = domain.NewID(domain.PrefixInboundEvent)
		f.append(t, first)
		resolved := f.move(t, statusChange(f.conv, domain.StatusResolved, t0.Add(2*time.Second)))
		for _, messageFirst := range []bool{true, false} {
			again := first
			again.ID = domain.NewID(domain.PrefixMessage) // the task's second run builds a new id
			change := statusChange(resolved, domain.StatusAI, t0.Add(time.Minute), delivery(resolved, domain.EventMessageCreated))
			change.From = []domain.ConversationStatus{domain.StatusResolved}
			got, changed, err := f.Store.ChangeStatus(f.ctx, change.WithMessage(&domain.Workspace{ID: f.ws}, resolved, again, messageFirst))
			if !errors.Is(err, domain.ErrMessageExists) || changed || got != resolved {
				t.Errorf("first=%v: %+v, %v, %v; want ErrMessageExists and the conversation as it is", messageFirst, got, changed, err)
			}
		}
		if r := roles(f.messages(t)); !slices.Equal(r, []domain.Role{domain.RoleUser, domain.RoleSystem}) || f.outbox(t) != 0 {
			t.Errorf("stored %v and %d deliveries", r, f.outbox(t))
		}
		// A message first is stored under the one state the change moves
		// from: once the conversation left it, the change just does not
		// apply, whether or not the message was stored before.
		reopened := f.move(t, statusChange(resolved, domain.StatusAI, t0.Add(3*time.Second)))
		again := first
		again.ID = domain.NewID(domain.PrefixMessage)
		change := statusChange(resolved, domain.StatusAI, t0.Add(time.Minute))
		change.From = []domain.ConversationStatus{domain.StatusResolved}
		got, changed, err := f.Store.ChangeStatus(f.ctx, change.WithMessage(&domain.Workspace{ID: f.ws}, resolved, again, true))
		if err != nil || changed || got != reopened {
			t.Errorf("under a state that moved: %+v, %v, %v; want the conversation as it is, unchanged", got, changed, err)
		}
	}},

	// Undocumented: a message first is counted before the MessageCount
	// condition is checked, so a change carrying both applies only when
	// MessageCount already counts the message. No caller combines them
	// (NewStatusChange sets MessageCount for a handoff's transcript,
	// WithMessage first only reopens).
	{"ChangeStatus with a message first checks MessageCount after it", func(t *testing.T, f *fixture) {
		for _, tc := range []struct {
			count   int
			changed bool
		}{{0, false}, {1, true}} {
			conv := f.newConversation(t, f.ws, f.agent, t0)
			change := statusChange(conv, domain.StatusHuman, t0.Add(time.Minute))
			change.MessageCount = &tc.count
			change = change.WithMessage(&domain.Workspace{ID: f.ws}, conv, newMessage(f.ws, conv.ID, domain.RoleUser, "q", t0), true)
			_, changed, err := f.Store.ChangeStatus(f.ctx, change)
			if err != nil || changed != tc.changed {
				t.Errorf("MessageCount %d: changed %v, %v; want %v", tc.count, changed, err, tc.changed)
			}
		}
	}},

	// Users keep writing while a handoff is requested, as the use cases do
	// (read, decide, write under the state read, decide again when
	// refused): every message ends up either in the handoff's transcript or
	// appended under HANDOFF_REQUESTED, never in neither or both.
	{"messages racing a handoff reach the helpdesk once", func(t *testing.T, f *fixture) {
		for round := range 5 {
			conv := f.newConversation(t, f.ws, f.agent, t0)
			f.append(t, newMessage(f.ws, conv.ID, domain.RoleUser, "hello", t0))
			var (
				wg                   sync.WaitGroup
				underAI, inHandoff   []string
				transcript           []string
				handoffErr, appendEr error
			)
			wg.Go(func() {
				for i := range 5 {
					m := newMessage(f.ws, conv.ID, domain.RoleUser, "racing", t0.Add(time.Duration(i)*time.Millisecond))
					state := domain.StatusAI
					for {
						_, _, err := f.Store.AppendMessage(f.ctx, m, state)
						if errors.Is(err, domain.ErrStatusChanged) {
							read, err := f.Store.GetConversation(f.ctx, f.ws, conv.ID)
							if err != nil {
								appendEr = err
								return
							}
							state = read.Status
							continue
						}
						if err != nil {
							appendEr = err
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
					read, err := f.Store.HandoffTranscript(f.ctx, f.ws, conv.ID, 100)
					if err != nil {
						handoffErr = err
						return
					}
					change := statusChange(conv, domain.StatusHandoffRequested, t0.Add(time.Second))
					change.From = []domain.ConversationStatus{domain.StatusAI}
					change.MessageCount = &read.MessageCount
					_, changed, err := f.Store.ChangeStatus(f.ctx, change)
					if err != nil {
						handoffErr = err
						return
					}
					if changed {
						transcript = ids(read.Messages)
						return
					}
				}
			})
			wg.Wait()
			if handoffErr != nil || appendEr != nil {
				t.Fatalf("round %d: handoff %v, appends %v", round, handoffErr, appendEr)
			}
			if len(underAI)+len(inHandoff) != 5 {
				t.Fatalf("round %d: %d under AI + %d in handoff, want 5", round, len(underAI), len(inHandoff))
			}
			for _, id := range underAI {
				if !slices.Contains(transcript, id) {
					t.Fatalf("round %d: %s was appended while AI but is not in the transcript %v", round, id, transcript)
				}
			}
			for _, id := range inHandoff {
				if slices.Contains(transcript, id) {
					t.Fatalf("round %d: %s is both in the transcript and delivered on its own", round, id)
				}
			}
		}
	}},
}

// equalMessage compares messages field by field, times as instants.
func equalMessage(a, b domain.Message) bool {
	at, bt := a.CreatedAt, b.CreatedAt
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	return at.Equal(bt) && slices.Equal(a.TokenEnds, b.TokenEnds) && len(a.Citations) == len(b.Citations) &&
		a.ID == b.ID && a.WorkspaceID == b.WorkspaceID && a.ConversationID == b.ConversationID && a.Role == b.Role &&
		a.Content == b.Content && a.Status == b.Status && a.AuthorName == b.AuthorName && a.ReplyID == b.ReplyID &&
		a.InboundEventID == b.InboundEventID && a.FallbackReason == b.FallbackReason && a.OfferHandoff == b.OfferHandoff
}
