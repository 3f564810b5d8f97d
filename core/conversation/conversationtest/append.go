package conversationtest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

var appendCases = []contractCase{
	{"AppendMessage counts, previews and dates; a late message moves neither back", func(t *testing.T, f *fixture) {
		user := f.msg(domain.RoleUser, "  Where is my order?  ", t0.Add(time.Second))
		stored := f.append(t, user)
		if want := asRead(user); !reflect.DeepEqual(stored, want) {
			t.Errorf("stored = %+v, want %+v", stored, want)
		}
		if got := f.get(t); got.MessageCount != 1 || got.LastMessage != "Where is my order?" || got.LastActivityAt != micro(user.CreatedAt) {
			t.Errorf("after one message: %+v", got)
		}
		long := strings.Repeat("é", 300)
		f.append(t, f.msg(domain.RoleAssistant, long, t0.Add(2*time.Second)))
		got := f.get(t)
		if got.MessageCount != 2 || got.LastMessage != domain.Preview(long, 200) || len([]rune(got.LastMessage)) != 200 ||
			got.LastActivityAt != micro(t0.Add(2*time.Second)) {
			t.Errorf("after a long reply: %+v", got)
		}
		late := f.msg(domain.RoleSystem, "late notice", t0)
		f.append(t, late)
		if now := f.get(t); now.MessageCount != 3 || now.LastMessage != got.LastMessage || now.LastActivityAt != got.LastActivityAt {
			t.Errorf("after a late message: %+v", now)
		}
		// Append order, whatever the times.
		if msgs := f.messages(t); len(msgs) != 3 || msgs[0].ID != user.ID || msgs[2].ID != late.ID {
			t.Errorf("messages %v", ids(msgs))
		}
	}},

	{"AppendMessage refuses another workspace's or an unknown conversation, and writes nothing", func(t *testing.T, f *fixture) {
		other := f.NewWorkspace(t)
		for name, m := range map[string]domain.Message{
			"another workspace":    newMessage(other, f.conv.ID, domain.RoleUser, "sneaky", t0.Add(time.Hour)),
			"unknown conversation": newMessage(f.ws, domain.NewID(domain.PrefixSession), domain.RoleUser, "x", t0),
		} {
			d := domain.NewDelivery(domain.TargetHelpdesk, domain.EventMessageCreated, domain.Conversation{ID: m.ConversationID, WorkspaceID: m.WorkspaceID}, t0)
			for _, while := range []domain.ConversationStatus{"", domain.StatusAI} {
				if _, _, err := f.Store.AppendMessage(f.ctx, m, while, d); !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("%s, while %q: err = %v, want not found", name, while, err)
				}
			}
		}
		if got := f.get(t); got.MessageCount != 0 {
			t.Errorf("conversation %+v", got)
		}
		if f.outbox(t, other)+f.outbox(t) != 0 {
			t.Error("refused appends wrote deliveries")
		}
	}},

	// Undocumented: a message id that exists is domain.ErrConflict.
	{"AppendMessage refuses a message id that exists", func(t *testing.T, f *fixture) {
		m := f.append(t, f.msg(domain.RoleUser, "hello", t0))
		again := f.msg(domain.RoleUser, "again", t0.Add(time.Second))
		again.ID = m.ID
		if _, _, err := f.Store.AppendMessage(f.ctx, again, "", delivery(f.conv, domain.EventMessageCreated)); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("err = %v, want conflict", err)
		}
		if got := f.get(t); got.MessageCount != 1 || got.LastMessage != "hello" || f.outbox(t) != 0 {
			t.Errorf("conversation %+v, %d deliveries; want it as it was", got, f.outbox(t))
		}
	}},

	{"AppendMessage writes its deliveries with the message, and under the state the caller decided", func(t *testing.T, f *fixture) {
		tests := []struct {
			name    string
			status  domain.ConversationStatus
			while   domain.ConversationStatus
			wantErr error
		}{
			{"any state", domain.StatusHuman, "", nil},
			{"the state decided under", domain.StatusHuman, domain.StatusHuman, nil},
			{"another state", domain.StatusHandoffRequested, domain.StatusAI, domain.ErrStatusChanged},
			{"resolved meanwhile", domain.StatusResolved, domain.StatusHuman, domain.ErrStatusChanged},
		}
		for _, tt := range tests {
			conv := f.newConversation(t, f.ws, f.agent, t0)
			if tt.status != domain.StatusAI {
				conv = f.move(t, statusChange(conv, tt.status, t0))
			}
			before := f.outbox(t)
			m := newMessage(f.ws, conv.ID, domain.RoleUser, "Are you there?", t0.Add(time.Second))
			ds := []domain.Delivery{domain.NewDelivery(domain.TargetHelpdesk, domain.EventMessageCreated, conv, t0), delivery(conv, domain.EventMessageCreated)}
			stored, created, err := f.Store.AppendMessage(f.ctx, m, tt.while, ds...)
			after := f.get(t, conv.ID)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, domain.ErrConflict) || created {
					t.Errorf("%s: %v, %v; want %v (a conflict)", tt.name, created, err, tt.wantErr)
				}
				if after.MessageCount != conv.MessageCount || f.outbox(t) != before {
					t.Errorf("%s: the refused append wrote: %+v, %d deliveries", tt.name, after, f.outbox(t)-before)
				}
				continue
			}
			if err != nil || !created || stored.ID != m.ID {
				t.Errorf("%s: %+v, %v, %v", tt.name, stored, created, err)
			}
			if after.MessageCount != conv.MessageCount+1 || f.outbox(t) != before+2 {
				t.Errorf("%s: %+v, %d deliveries; want one more message and 2 deliveries", tt.name, after, f.outbox(t)-before)
			}
		}
	}},

	{"AppendMessage stores an inbound event's message once", func(t *testing.T, f *fixture) {
		first := f.msg(domain.RoleUser, "from the webhook", t0.Add(time.Second))
		first.InboundEventID = domain.NewID(domain.PrefixInboundEvent)
		stored, created, err := f.Store.AppendMessage(f.ctx, first, domain.StatusAI, delivery(f.conv, domain.EventMessageCreated))
		if err != nil || !created {
			t.Fatalf("first append = %v, %v", created, err)
		}
		// The retry carries a new message id (the worker made a new one) and time.
		retry := f.msg(domain.RoleUser, "from the webhook", t0.Add(time.Minute))
		retry.InboundEventID = first.InboundEventID
		again, created, err := f.Store.AppendMessage(f.ctx, retry, domain.StatusAI, delivery(f.conv, domain.EventMessageCreated))
		if err != nil || created || !reflect.DeepEqual(again, stored) {
			t.Fatalf("retry = %+v, %v, %v; want the stored %+v, not created", again, created, err, stored)
		}
		if got := f.get(t); got.MessageCount != 1 || f.outbox(t) != 1 {
			t.Errorf("after the retry: %+v, %d deliveries; want 1 message, 1 delivery", got, f.outbox(t))
		}
		// Undocumented: a retry decided under a state the conversation
		// left is refused like any append.
		f.move(t, statusChange(f.conv, domain.StatusHuman, t0.Add(2*time.Second)))
		if _, _, err := f.Store.AppendMessage(f.ctx, retry, domain.StatusAI); !errors.Is(err, domain.ErrStatusChanged) {
			t.Errorf("retry under a stale state: err = %v, want ErrStatusChanged", err)
		}
		// The same event appended as another workspace does not reveal the message.
		foreign := retry
		foreign.WorkspaceID = f.NewWorkspace(t)
		if _, _, err := f.Store.AppendMessage(f.ctx, foreign, ""); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("append of the event as another workspace: err = %v, want not found", err)
		}
		// Undocumented: nor does it to a conversation of another workspace,
		// where the event's message is not stored either.
		otherAgent := f.NewAgent(t, foreign.WorkspaceID, "support")
		elsewhere := f.newConversation(t, foreign.WorkspaceID, otherAgent, t0)
		foreign.ConversationID = elsewhere.ID
		if _, _, err := f.Store.AppendMessage(f.ctx, foreign, ""); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("append of the event to another workspace's conversation: err = %v, want not found", err)
		}
	}},

	{"AppendMessage of one inbound event by racing workers stores it once", func(t *testing.T, f *fixture) {
		event := domain.NewID(domain.PrefixInboundEvent)
		const workers = 8
		var wg sync.WaitGroup
		type result struct {
			msg     domain.Message
			created bool
			err     error
		}
		results := make([]result, workers)
		for i := range workers {
			wg.Go(func() {
				m := f.msg(domain.RoleUser, "racing", t0.Add(time.Minute))
				m.InboundEventID = event
				results[i].msg, results[i].created, results[i].err = f.Store.AppendMessage(f.ctx, m, "")
			})
		}
		wg.Wait()
		created := 0
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("worker %d: %v", i, r.err)
			}
			if r.created {
				created++
			}
			if r.msg.ID != results[0].msg.ID {
				t.Errorf("worker %d got message %s, worker 0 got %s", i, r.msg.ID, results[0].msg.ID)
			}
		}
		if got := f.get(t); created != 1 || got.MessageCount != 1 {
			t.Errorf("%d workers created the message, conversation %+v; want 1 and 1 message", created, got)
		}
	}},

	{"concurrent appends keep an exact count", func(t *testing.T, f *fixture) {
		const n = 20
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, _, errs[i] = f.Store.AppendMessage(f.ctx, f.msg(domain.RoleUser, fmt.Sprintf("m%02d", i), t0.Add(time.Duration(i)*time.Second)), "")
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if got := f.get(t); got.MessageCount != n || got.LastMessage != fmt.Sprintf("m%02d", n-1) || got.LastActivityAt != micro(t0.Add((n-1)*time.Second)) {
			t.Errorf("conversation after %d concurrent appends = %+v", n, got)
		}
	}},

	{"AppendMessages stores a turn with its deliveries, all or nothing", func(t *testing.T, f *fixture) {
		tests := []struct {
			name    string
			status  domain.ConversationStatus
			while   domain.ConversationStatus
			foreign bool
			wantErr error
		}{
			{name: "decided under AI", status: domain.StatusAI, while: domain.StatusAI},
			{name: "any state", status: domain.StatusHuman},
			{name: "a person took over meanwhile", status: domain.StatusHuman, while: domain.StatusAI, wantErr: domain.ErrStatusChanged},
			{name: "conversation of another workspace", status: domain.StatusAI, foreign: true, wantErr: domain.ErrNotFound},
		}
		for _, tt := range tests {
			conv := f.newConversation(t, f.ws, f.agent, t0)
			f.append(t, newMessage(f.ws, conv.ID, domain.RoleUser, "hello", t0))
			if tt.status != domain.StatusAI {
				conv = f.move(t, statusChange(conv, tt.status, t0))
			}
			before, outbox := f.get(t, conv.ID), f.outbox(t)
			ws := f.ws
			if tt.foreign {
				ws = f.NewWorkspace(t)
			}
			turn := exchange(ws, conv.ID, t0.Add(time.Second))
			stored, err := f.Store.AppendMessages(f.ctx, turn, tt.while, delivery(before, domain.EventMessageCreated))
			after := f.get(t, conv.ID)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("%s: err = %v, want %v", tt.name, err, tt.wantErr)
				}
				if after != before || f.outbox(t) != outbox {
					t.Errorf("%s: a refused append wrote: %+v", tt.name, after)
				}
				continue
			}
			if err != nil || len(stored) != 2 || stored[0].ID != turn[0].ID || stored[1].ID != turn[1].ID || stored[1].Trace != turn[1].Trace {
				t.Errorf("%s: stored %+v, %v", tt.name, stored, err)
				continue
			}
			if after.MessageCount != before.MessageCount+2 || after.LastMessage != turn[1].Content || after.LastActivityAt != micro(turn[1].CreatedAt) {
				t.Errorf("%s: conversation %+v", tt.name, after)
			}
			read := f.messages(t, conv.ID)
			for i, m := range read[len(read)-2:] {
				if want := asRead(stored[i]); !reflect.DeepEqual(m, want) {
					t.Errorf("%s: read %+v\nwant %+v", tt.name, m, want)
				}
			}
			if f.outbox(t) != outbox+1 {
				t.Errorf("%s: %d deliveries, want 1", tt.name, f.outbox(t)-outbox)
			}
		}
	}},

	{"AppendMessages stores none of a turn one of whose messages cannot be stored", func(t *testing.T, f *fixture) {
		existing := f.append(t, f.msg(domain.RoleUser, "hello", t0))
		turn := exchange(f.ws, f.conv.ID, t0.Add(time.Second))
		turn[1].ID = existing.ID
		if _, err := f.Store.AppendMessages(f.ctx, turn, "", delivery(f.conv, domain.EventMessageCreated)); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("err = %v, want conflict", err)
		}
		if got := f.get(t); got.MessageCount != 1 || len(f.messages(t)) != 1 || f.outbox(t) != 0 {
			t.Errorf("conversation %+v, %d messages, %d deliveries; want the first message alone", got, len(f.messages(t)), f.outbox(t))
		}
	}},

	// An older turn appended late (a clock behind another pod's) counts, but
	// leaves the conversation's last message and activity to the newer one.
	{"AppendMessages never moves activity back", func(t *testing.T, f *fixture) {
		newer := exchange(f.ws, f.conv.ID, t0.Add(time.Hour))
		if _, err := f.Store.AppendMessages(f.ctx, newer, domain.StatusAI); err != nil {
			t.Fatal(err)
		}
		older := exchange(f.ws, f.conv.ID, t0.Add(time.Minute))
		older[1].Content = "an older reply"
		if _, err := f.Store.AppendMessages(f.ctx, older, domain.StatusAI); err != nil {
			t.Fatal(err)
		}
		if got := f.get(t); got.MessageCount != 4 || got.LastMessage != newer[1].Content || got.LastActivityAt != micro(newer[1].CreatedAt) {
			t.Errorf("conversation = %+v", got)
		}
	}},

	// Undocumented: within a batch the newest message is the preview, a
	// tie going to the later one.
	{"AppendMessages previews the batch's newest message", func(t *testing.T, f *fixture) {
		a := f.msg(domain.RoleUser, "later in time", t0.Add(time.Hour))
		b := f.msg(domain.RoleAssistant, "earlier in time", t0.Add(time.Minute))
		c := f.msg(domain.RoleSystem, "tie, later in the batch", t0.Add(time.Hour))
		if _, err := f.Store.AppendMessages(f.ctx, []domain.Message{a, b}, ""); err != nil {
			t.Fatal(err)
		}
		if got := f.get(t); got.LastMessage != "later in time" || got.LastActivityAt != micro(a.CreatedAt) {
			t.Errorf("conversation = %+v", got)
		}
		if _, err := f.Store.AppendMessages(f.ctx, []domain.Message{c}, ""); err != nil {
			t.Fatal(err)
		}
		if got := f.get(t); got.LastMessage != c.Content {
			t.Errorf("conversation = %+v, want the tie's later message", got)
		}
	}},
}
