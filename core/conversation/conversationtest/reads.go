package conversationtest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

var readCases = []contractCase{
	{"messages read back with every field but the trace", func(t *testing.T, f *fixture) {
		turn := exchange(f.ws, f.conv.ID, t0.Add(time.Second))
		turn[0].IdempotencyKey, turn[0].RequestHash = "api:k", "hash"
		human := f.msg(domain.RoleHuman, "Ana here.", t0.Add(time.Minute))
		human.AuthorName, human.AuthorID = "Ana", domain.NewID(domain.PrefixUser)
		notice := f.msg(domain.RoleSystem, "A person will answer.", t0.Add(time.Minute))
		notice.Status = domain.StatusHandoffRequested
		inbound := f.msg(domain.RoleUser, "from the CRM", t0.Add(time.Hour))
		inbound.InboundEventID = domain.NewID(domain.PrefixInboundEvent)
		empty := f.msg(domain.RoleAssistant, "no citations", t0.Add(time.Hour))
		empty.Citations, empty.TokenEnds = []domain.Citation{}, []int{3, 12}
		if _, err := f.Store.AppendMessages(f.ctx, turn, ""); err != nil {
			t.Fatal(err)
		}
		for _, m := range []domain.Message{human, notice, inbound, empty} {
			f.append(t, m)
		}
		empty.Citations = nil // an empty list reads as none
		want := []domain.Message{asRead(turn[0]), asRead(turn[1]), asRead(human), asRead(notice), asRead(inbound), asRead(empty)}
		reads := map[string]func() ([]domain.Message, error){
			"RecentMessages": func() ([]domain.Message, error) { return f.Store.RecentMessages(f.ctx, f.ws, f.conv.ID, 10) },
			"ListMessages": func() ([]domain.Message, error) {
				p, err := f.Store.ListMessages(f.ctx, f.ws, f.conv.ID, domain.PageRequest{})
				return p.Items, err
			},
			"MessagesFrom": func() ([]domain.Message, error) { return f.Store.MessagesFrom(f.ctx, f.ws, f.conv.ID, "", 10) },
			"HandoffTranscript": func() ([]domain.Message, error) {
				tr, err := f.Store.HandoffTranscript(f.ctx, f.ws, f.conv.ID, 10)
				return tr.Messages, err
			},
		}
		for name, read := range reads {
			got, err := read()
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s = %v\n%+v\nwant\n%+v", name, err, got, want)
			}
		}
	}},

	{"notes are read with the conversation, never for the model or the helpdesk", func(t *testing.T, f *fixture) {
		question := f.append(t, f.msg(domain.RoleUser, "Where is my order?", t0.Add(time.Second)))
		note := f.msg(domain.RoleNote, "VIP: refund without asking.", t0.Add(2*time.Second))
		note.AuthorName, note.AuthorID = "Ana", domain.NewID(domain.PrefixUser)
		note = f.append(t, note)
		reply := f.append(t, f.msg(domain.RoleAssistant, "On its way.", t0.Add(3*time.Second)))
		f.append(t, f.msg(domain.RoleNote, "second note", t0.Add(4*time.Second)))
		all, err := f.Store.ListMessages(f.ctx, f.ws, f.conv.ID, domain.PageRequest{})
		if err != nil || len(all.Items) != 4 || !reflect.DeepEqual(all.Items[1], asRead(note)) {
			t.Fatalf("ListMessages = %v, %+v; want every message, the note as written", err, all.Items)
		}
		if from, err := f.Store.MessagesFrom(f.ctx, f.ws, f.conv.ID, "", 10); err != nil || len(from) != 4 {
			t.Fatalf("MessagesFrom = %v, %d messages; want all 4 (the relay skips notes)", err, len(from))
		}
		public := []string{question.ID, reply.ID}
		if recent, err := f.Store.RecentMessages(f.ctx, f.ws, f.conv.ID, 2); err != nil || !slices.Equal(ids(recent), public) {
			t.Fatalf("RecentMessages(2) = %v, %v; want %v", err, ids(recent), public)
		}
		tr, err := f.Store.HandoffTranscript(f.ctx, f.ws, f.conv.ID, 2)
		if err != nil || !slices.Equal(ids(tr.Messages), public) || tr.MessageCount != 4 {
			t.Fatalf("HandoffTranscript(2) = %v, %v (count %d); want %v, count 4", err, ids(tr.Messages), tr.MessageCount, public)
		}
	}},

	// Undocumented: RecentMessages of a conversation the workspace does not
	// have is empty, not domain.ErrNotFound.
	{"RecentMessages returns the latest, oldest first", func(t *testing.T, f *fixture) {
		for i := range 5 {
			f.append(t, f.msg(domain.RoleUser, fmt.Sprint(i), t0))
		}
		recent, err := f.Store.RecentMessages(f.ctx, f.ws, f.conv.ID, 3)
		if err != nil || len(recent) != 3 || recent[0].Content != "2" || recent[2].Content != "4" {
			t.Errorf("recent = %+v, %v", recent, err)
		}
		for name, ws := range map[string]string{"another workspace": f.NewWorkspace(t), "unknown": f.ws} {
			id := f.conv.ID
			if name == "unknown" {
				id = domain.NewID(domain.PrefixSession)
			}
			if got, err := f.Store.RecentMessages(f.ctx, ws, id, 3); err != nil || len(got) != 0 {
				t.Errorf("%s: %+v, %v; want none", name, got, err)
			}
		}
	}},

	{"HandoffTranscript reads the latest messages and the count together", func(t *testing.T, f *fixture) {
		empty, err := f.Store.HandoffTranscript(f.ctx, f.ws, f.conv.ID, 10)
		if err != nil || len(empty.Messages) != 0 || empty.MessageCount != 0 {
			t.Fatalf("empty conversation: %+v, %v", empty, err)
		}
		var all []string
		for i := range 4 {
			all = append(all, f.append(t, f.msg(domain.RoleUser, fmt.Sprint(i), t0)).ID)
		}
		tr, err := f.Store.HandoffTranscript(f.ctx, f.ws, f.conv.ID, 3)
		if err != nil || !slices.Equal(ids(tr.Messages), all[1:]) || tr.MessageCount != 4 {
			t.Errorf("transcript %v (%d), %v; want %v (4)", ids(tr.Messages), tr.MessageCount, err, all[1:])
		}
		if _, err := f.Store.HandoffTranscript(f.ctx, f.NewWorkspace(t), f.conv.ID, 10); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another workspace: err = %v, want not found", err)
		}
		if _, err := f.Store.HandoffTranscript(f.ctx, f.ws, domain.NewID(domain.PrefixSession), 10); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("unknown conversation: err = %v, want not found", err)
		}
	}},

	{"ListMessages pages in append order", func(t *testing.T, f *fixture) {
		other := f.newConversation(t, f.ws, f.agent, t0)
		var want []string
		for i := range 7 {
			// One time for all: the order is still append order.
			want = append(want, f.append(t, f.msg(domain.RoleUser, fmt.Sprintf("m%d", i), t0)).ID)
		}
		var got []string
		req := domain.PageRequest{Limit: 3}
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("pagination does not end")
			}
			page, err := f.Store.ListMessages(f.ctx, f.ws, f.conv.ID, req)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(page.Items)...)
			if !page.HasMore {
				if page.Next != nil {
					t.Errorf("last page has Next %+v", page.Next)
				}
				break
			}
			last := page.Items[len(page.Items)-1]
			if *page.Next != (domain.Position{Time: last.CreatedAt, ID: last.ID}) {
				t.Errorf("Next = %+v, want the last item's position", page.Next)
			}
			req.After = page.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("messages in pages = %v, want %v", got, want)
		}
		last := domain.Position{Time: t0, ID: want[len(want)-1]}
		if page, err := f.Store.ListMessages(f.ctx, f.ws, f.conv.ID, domain.PageRequest{After: &last}); err != nil || len(page.Items) != 0 || page.HasMore {
			t.Errorf("page after the last message = %+v, %v", page, err)
		}
		if page, err := f.Store.ListMessages(f.ctx, f.ws, other.ID, domain.PageRequest{}); err != nil || len(page.Items) != 0 || page.HasMore {
			t.Errorf("empty conversation = %+v, %v", page, err)
		}
		if page, err := f.Store.ListMessages(f.ctx, f.ws, f.conv.ID, domain.PageRequest{Limit: 1000}); err != nil || len(page.Items) != 7 {
			t.Errorf("a limit over the maximum = %d items, %v", len(page.Items), err)
		}
		// A cursor from another conversation is refused rather than silently empty.
		if _, err := f.Store.ListMessages(f.ctx, f.ws, other.ID, domain.PageRequest{After: &last}); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("foreign cursor: err = %v, want ErrInvalidInput", err)
		}
		if _, err := f.Store.ListMessages(f.ctx, f.NewWorkspace(t), f.conv.ID, domain.PageRequest{}); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another workspace: err = %v, want not found", err)
		}
		if _, err := f.Store.ListMessages(f.ctx, f.ws, domain.NewID(domain.PrefixSession), domain.PageRequest{After: &last}); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("unknown conversation: err = %v, want not found", err)
		}
	}},

	{"ListMessages pages of the default and the maximum size", func(t *testing.T, f *fixture) {
		turn := make([]domain.Message, domain.MaxPageLimit+1)
		for i := range turn {
			turn[i] = f.msg(domain.RoleUser, fmt.Sprint(i), t0)
		}
		if _, err := f.Store.AppendMessages(f.ctx, turn, ""); err != nil {
			t.Fatal(err)
		}
		for limit, want := range map[int]int{0: domain.DefaultPageLimit, -1: domain.DefaultPageLimit, domain.MaxPageLimit + 5: domain.MaxPageLimit} {
			page, err := f.Store.ListMessages(f.ctx, f.ws, f.conv.ID, domain.PageRequest{Limit: limit})
			if err != nil || len(page.Items) != want || !page.HasMore {
				t.Errorf("limit %d: %d items, more %v, %v; want %d", limit, len(page.Items), page.HasMore, err, want)
			}
		}
	}},

	{"ListConversations pages newest activity first, by filter, within the workspace", func(t *testing.T, f *fixture) {
		ws := f.NewWorkspace(t)
		other := f.NewWorkspace(t)
		support := f.NewAgent(t, ws, "support")
		sales := f.NewAgent(t, ws, "sales")
		otherAgent := f.NewAgent(t, other, "support")
		var all []domain.Conversation
		for i := range 13 {
			agent := support
			if i%3 == 0 {
				agent = sales
			}
			// Groups of four share their last activity, so ties go by id.
			c := domain.NewConversation(ws, &agent, "", t0.Add(time.Duration(i/4)*time.Minute))
			if i%5 == 0 {
				c.Status = domain.StatusHuman
			}
			if err := f.Store.CreateConversation(f.ctx, &c); err != nil {
				t.Fatal(err)
			}
			all = append(all, c)
			f.newConversation(t, other, otherAgent, t0.Add(time.Duration(i)*time.Minute))
		}
		keep := func(ok func(domain.Conversation) bool) []string {
			var kept []domain.Conversation
			for _, c := range all {
				if ok(c) {
					kept = append(kept, c)
				}
			}
			slices.SortFunc(kept, func(a, b domain.Conversation) int {
				if c := b.LastActivityAt.Compare(a.LastActivityAt); c != 0 {
					return c
				}
				return strings.Compare(b.ID, a.ID)
			})
			var out []string
			for _, c := range kept {
				out = append(out, c.ID)
			}
			return out
		}
		minute := func(n int) time.Time { return t0.Truncate(time.Minute).Add(time.Duration(n) * time.Minute) }
		tests := []struct {
			name   string
			filter domain.ConversationFilter
			want   []string
		}{
			{"all", domain.ConversationFilter{}, keep(func(domain.Conversation) bool { return true })},
			{"by agent", domain.ConversationFilter{AgentID: sales.ID}, keep(func(c domain.Conversation) bool { return c.AgentID == sales.ID })},
			{"by status", domain.ConversationFilter{Status: domain.StatusHuman}, keep(func(c domain.Conversation) bool { return c.Status == domain.StatusHuman })},
			{"by agent and status", domain.ConversationFilter{AgentID: support.ID, Status: domain.StatusAI},
				keep(func(c domain.Conversation) bool { return c.AgentID == support.ID && c.Status == domain.StatusAI })},
			{"another workspace's agent", domain.ConversationFilter{AgentID: otherAgent.ID}, nil},
			{"no match", domain.ConversationFilter{Status: domain.StatusResolved}, nil},
			// Bounds on whole minutes: stores keep microseconds, t0 has more.
			{"active in a range", domain.ConversationFilter{ActiveFrom: minute(2), ActiveBefore: minute(4)},
				keep(func(c domain.Conversation) bool {
					return !c.LastActivityAt.Before(minute(2)) && c.LastActivityAt.Before(minute(4))
				})},
			{"active since", domain.ConversationFilter{ActiveFrom: minute(3)}, keep(func(c domain.Conversation) bool { return !c.LastActivityAt.Before(minute(3)) })},
			{"active before, by status", domain.ConversationFilter{Status: domain.StatusHuman, ActiveBefore: minute(2)},
				keep(func(c domain.Conversation) bool {
					return c.Status == domain.StatusHuman && c.LastActivityAt.Before(minute(2))
				})},
			{"an empty range", domain.ConversationFilter{ActiveFrom: t0.Add(time.Hour)}, nil},
		}
		for _, tt := range tests {
			var got []string
			req := domain.PageRequest{Limit: 4}
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatalf("%s: pagination does not end", tt.name)
				}
				page, err := f.Store.ListConversations(f.ctx, ws, tt.filter, req)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range page.Items {
					if c.WorkspaceID != ws || (c.AgentID == sales.ID) != (c.AgentSlug == "sales") {
						t.Errorf("%s: conversation %+v", tt.name, c)
					}
					got = append(got, c.ID)
				}
				if !page.HasMore {
					break
				}
				last := page.Items[len(page.Items)-1]
				if *page.Next != (domain.Position{Time: last.LastActivityAt, ID: last.ID}) {
					t.Errorf("%s: Next = %+v, want the last item's position", tt.name, page.Next)
				}
				req.After = page.Next
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s: conversations in pages =\n%v\nwant\n%v", tt.name, got, tt.want)
			}
		}
		// A conversation that becomes active while a client pages moves to
		// the front and neither skips nor repeats anything on later pages.
		order := keep(func(domain.Conversation) bool { return true })
		page, err := f.Store.ListConversations(f.ctx, ws, domain.ConversationFilter{}, domain.PageRequest{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, c := range page.Items {
			seen[c.ID] = true
		}
		bumped := order[10]
		if _, _, err := f.Store.AppendMessage(f.ctx, newMessage(ws, bumped, domain.RoleUser, "hi", t0.Add(time.Hour)), ""); err != nil {
			t.Fatal(err)
		}
		for page.HasMore {
			if page, err = f.Store.ListConversations(f.ctx, ws, domain.ConversationFilter{}, domain.PageRequest{Limit: 5, After: page.Next}); err != nil {
				t.Fatal(err)
			}
			for _, c := range page.Items {
				if seen[c.ID] {
					t.Errorf("conversation %s repeated", c.ID)
				}
				seen[c.ID] = true
			}
		}
		if len(seen) != len(all)-1 || seen[bumped] {
			t.Errorf("saw %d conversations (bumped seen: %v), want all %d but the bumped one", len(seen), seen[bumped], len(all))
		}
		first, err := f.Store.ListConversations(f.ctx, ws, domain.ConversationFilter{}, domain.PageRequest{Limit: 1})
		if err != nil || len(first.Items) != 1 || first.Items[0].ID != bumped || first.Items[0].MessageCount != 1 {
			t.Errorf("first page after the bump = %+v, %v", first, err)
		}
		if empty, err := f.Store.ListConversations(f.ctx, f.NewWorkspace(t), domain.ConversationFilter{}, domain.PageRequest{}); err != nil || len(empty.Items) != 0 || empty.HasMore {
			t.Errorf("a workspace without conversations = %+v, %v", empty, err)
		}
	}},

	{"MessageTrace reads the trace stored with a reply", func(t *testing.T, f *fixture) {
		turn := exchange(f.ws, f.conv.ID, t0)
		if _, err := f.Store.AppendMessages(f.ctx, turn, ""); err != nil {
			t.Fatal(err)
		}
		trace, err := f.Store.MessageTrace(f.ctx, f.ws, f.conv.ID, turn[1].ID)
		want := turn[1].Trace
		if err != nil || trace.Question != want.Question || trace.Query != want.Query || trace.QueryNote != want.QueryNote ||
			trace.Method != want.Method || trace.TopK != want.TopK || trace.Threshold != want.Threshold ||
			len(trace.Candidates) != 1 || trace.Candidates[0].ChunkID != "chk_1" || trace.Candidates[0].Score != 0.75 || !trace.Candidates[0].Kept {
			t.Errorf("trace = %+v, %v; want %+v", trace, err, want)
		}
		other := f.newConversation(t, f.ws, f.agent, t0)
		for name, read := range map[string][3]string{
			"a message without a trace": {f.ws, f.conv.ID, turn[0].ID},
			"another conversation":      {f.ws, other.ID, turn[1].ID},
			"another workspace":         {f.NewWorkspace(t), f.conv.ID, turn[1].ID},
			"an unknown message":        {f.ws, f.conv.ID, domain.NewID(domain.PrefixMessage)},
		} {
			if _, err := f.Store.MessageTrace(f.ctx, read[0], read[1], read[2]); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s: err = %v, want not found", name, err)
			}
		}
		// Undocumented: a trace without a question (stored before questions
		// were kept) reads with its query as its question.
		old := f.msg(domain.RoleAssistant, "older", t0)
		old.Trace = &domain.RetrievalTrace{Query: "reset password", Method: "keyword"}
		f.append(t, old)
		if trace, err := f.Store.MessageTrace(f.ctx, f.ws, f.conv.ID, old.ID); err != nil || trace.Question != "reset password" {
			t.Errorf("trace without a question = %+v, %v", trace, err)
		}
	}},

	{"MessagesFrom reads in append order from a message on", func(t *testing.T, f *fixture) {
		empty := f.newConversation(t, f.ws, f.agent, t0)
		elsewhere := f.newConversation(t, f.ws, f.agent, t0)
		var all []string
		for _, role := range []domain.Role{domain.RoleUser, domain.RoleAssistant, domain.RoleSystem, domain.RoleHuman} {
			all = append(all, f.append(t, f.msg(role, "m", t0)).ID)
		}
		f.append(t, newMessage(f.ws, elsewhere.ID, domain.RoleUser, "other", t0))
		other := f.NewWorkspace(t)
		tests := []struct {
			name     string
			ws, conv string
			from     string
			limit    int
			want     []string
			wantErr  error
		}{
			{name: "from the start", ws: f.ws, conv: f.conv.ID, limit: 10, want: all},
			{name: "from the reply", ws: f.ws, conv: f.conv.ID, from: all[1], limit: 10, want: all[1:]},
			{name: "a page", ws: f.ws, conv: f.conv.ID, from: all[1], limit: 2, want: all[1:3]},
			{name: "from the last", ws: f.ws, conv: f.conv.ID, from: all[3], limit: 10, want: all[3:]},
			// Undocumented: a limit under one reads one.
			{name: "a limit of zero", ws: f.ws, conv: f.conv.ID, limit: 0, want: all[:1]},
			{name: "empty conversation", ws: f.ws, conv: empty.ID, limit: 10},
			{name: "unknown message", ws: f.ws, conv: f.conv.ID, from: domain.NewID(domain.PrefixMessage), limit: 10, wantErr: domain.ErrNotFound},
			{name: "message of another conversation", ws: f.ws, conv: empty.ID, from: all[0], limit: 10, wantErr: domain.ErrNotFound},
			{name: "another workspace", ws: other, conv: f.conv.ID, limit: 10, wantErr: domain.ErrNotFound},
			{name: "another workspace, from a message", ws: other, conv: f.conv.ID, from: all[0], limit: 10, wantErr: domain.ErrNotFound},
			{name: "unknown conversation", ws: f.ws, conv: domain.NewID(domain.PrefixSession), limit: 10, wantErr: domain.ErrNotFound},
		}
		for _, tt := range tests {
			got, err := f.Store.MessagesFrom(f.ctx, tt.ws, tt.conv, tt.from, tt.limit)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("%s: err = %v, want %v", tt.name, err, tt.wantErr)
				}
				continue
			}
			if err != nil || !slices.Equal(ids(got), tt.want) {
				t.Errorf("%s: %v, %v; want %v", tt.name, ids(got), err, tt.want)
			}
		}
	}},
}
