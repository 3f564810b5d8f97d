package postgres_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

func TestSetFeedback(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	other := newConversation(t, f.store, f.ws.ID, f.agent, t0)
	wsB, _, _ := newWorkspace(t, f.store, domain.PlanStandard)

	appendMsg := func(convID string, role domain.Role, content string) domain.Message {
		t.Helper()
		m, _, err := f.store.AppendMessage(ctx, newMessage(f.ws.ID, convID, role, content, t0), "")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	question := appendMsg(f.conv.ID, domain.RoleUser, "How do refunds work?")
	answer := appendMsg(f.conv.ID, domain.RoleAssistant, "Within 30 days.")
	elsewhere := appendMsg(other.ID, domain.RoleAssistant, "Another answer.")

	up := &domain.Feedback{Rating: domain.RatingUp, Comment: "clear", UpdatedAt: t0}
	tests := []struct {
		name          string
		ws, conv, msg string
		fb            *domain.Feedback
		want          error
	}{
		{"rate an answer", f.ws.ID, f.conv.ID, answer.ID, up, nil},
		{"a question is not an answer", f.ws.ID, f.conv.ID, question.ID, up, domain.ErrFeedbackNotAnswer},
		{"another conversation's answer", f.ws.ID, f.conv.ID, elsewhere.ID, up, domain.ErrNotFound},
		{"another workspace", wsB.ID, f.conv.ID, answer.ID, up, domain.ErrNotFound},
		{"unknown message", f.ws.ID, f.conv.ID, domain.NewID(domain.PrefixMessage), up, domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := f.store.SetFeedback(ctx, tt.ws, tt.conv, tt.msg, tt.fb); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}

	page, err := f.store.ListMessages(ctx, f.ws.ID, f.conv.ID, domain.PageRequest{})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("ListMessages = %+v, %v", page, err)
	}
	if page.Items[0].Feedback != nil || page.Items[1].Feedback == nil || *page.Items[1].Feedback != (domain.Feedback{Rating: domain.RatingUp, Comment: "clear", UpdatedAt: micro(t0)}) {
		t.Fatalf("feedback read back: %+v, %+v", page.Items[0].Feedback, page.Items[1].Feedback)
	}

	if err := f.store.SetFeedback(ctx, f.ws.ID, f.conv.ID, answer.ID, nil); err != nil {
		t.Fatal(err)
	}
	page, _ = f.store.ListMessages(ctx, f.ws.ID, f.conv.ID, domain.PageRequest{})
	if page.Items[1].Feedback != nil {
		t.Fatalf("cleared feedback read back as %+v", page.Items[1].Feedback)
	}
	list, err := f.store.ListFeedback(ctx, f.ws.ID, domain.FeedbackFilter{}, domain.PageRequest{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("cleared feedback is still listed: %+v, %v", list, err)
	}
}

func TestListFeedback(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	sales := newAgent(t, f.store, f.ws.ID, "sales", t0)
	salesConv := newConversation(t, f.store, f.ws.ID, sales, t0)
	wsB, _, _ := newWorkspace(t, f.store, domain.PlanStandard)
	agentB := newAgent(t, f.store, wsB.ID, "support", t0)
	convB := newConversation(t, f.store, wsB.ID, agentB, t0)

	type rated struct {
		id     string
		agent  string
		rating domain.Rating
	}
	var all []rated
	rate := func(ws, conv, agent string, rating domain.Rating, at time.Time) {
		t.Helper()
		m, _, err := f.store.AppendMessage(ctx, newMessage(ws, conv, domain.RoleAssistant, "answer", t0), "")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.SetFeedback(ctx, ws, conv, m.ID, &domain.Feedback{Rating: rating, Comment: "c", UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
		if ws == f.ws.ID {
			all = append(all, rated{m.ID, agent, rating})
		}
	}
	for i := range 7 {
		// Pairs share a rating time: the id breaks the tie.
		at := t0.Add(time.Duration(i/2) * time.Second)
		rating := domain.RatingUp
		if i%3 == 0 {
			rating = domain.RatingDown
		}
		if i%2 == 0 {
			rate(f.ws.ID, f.conv.ID, "support", rating, at)
		} else {
			rate(f.ws.ID, salesConv.ID, "sales", rating, at)
		}
	}
	rate(wsB.ID, convB.ID, "support", domain.RatingDown, t0.Add(time.Hour)) // another workspace's
	// An unrated answer is not listed.
	if _, _, err := f.store.AppendMessage(ctx, newMessage(f.ws.ID, f.conv.ID, domain.RoleAssistant, "unrated", t0), ""); err != nil {
		t.Fatal(err)
	}

	// The order is checked pairwise below; here, which answers are listed.
	expected := func(keep func(rated) bool) []string {
		var ids []string
		for _, r := range all {
			if keep(r) {
				ids = append(ids, r.id)
			}
		}
		return ids
	}
	tests := []struct {
		name   string
		filter domain.FeedbackFilter
		keep   func(rated) bool
	}{
		{"all", domain.FeedbackFilter{}, func(rated) bool { return true }},
		{"down", domain.FeedbackFilter{Rating: domain.RatingDown}, func(r rated) bool { return r.rating == domain.RatingDown }},
		{"sales", domain.FeedbackFilter{AgentID: sales.ID}, func(r rated) bool { return r.agent == "sales" }},
		{"support, up", domain.FeedbackFilter{AgentID: f.agent.ID, Rating: domain.RatingUp}, func(r rated) bool {
			return r.agent == "support" && r.rating == domain.RatingUp
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []domain.RatedAnswer
			req := domain.PageRequest{Limit: 2}
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("pagination does not end")
				}
				page, err := f.store.ListFeedback(ctx, f.ws.ID, tt.filter, req)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page.Items...)
				if !page.HasMore {
					break
				}
				req.After = page.Next
			}
			for i := 1; i < len(got); i++ {
				a, b := got[i-1], got[i]
				if a.Feedback.UpdatedAt.Before(b.Feedback.UpdatedAt) || (a.Feedback.UpdatedAt.Equal(b.Feedback.UpdatedAt) && a.MessageID < b.MessageID) {
					t.Fatalf("not newest first: %+v before %+v", a, b)
				}
			}
			var ids []string
			for _, a := range got {
				ids = append(ids, a.MessageID)
				if a.Content != "answer" || a.Feedback.Comment != "c" || a.AgentSlug == "" || a.ConversationID == "" {
					t.Fatalf("item %+v", a)
				}
			}
			want := expected(tt.keep)
			slices.Sort(ids)
			slices.Sort(want)
			if !slices.Equal(ids, want) {
				t.Fatalf("listed %v, want %v", ids, want)
			}
		})
	}
}
