package chat

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func TestAnswerWidensFollowUps(t *testing.T) {
	const first = "How long does standard delivery take?"
	tests := []struct {
		name     string
		fresh    bool // the message starts the session
		whole    bool // the caller waits for the whole answer
		message  string
		want     string
		wantNote string
	}{
		{name: "a follow-up adds the previous question", message: "and how much is express?",
			want: "and how much is express?\n" + first, wantNote: "follow-up: the query adds the conversation's previous question"},
		{name: "the same for a caller waiting for the whole answer", whole: true, message: "Does it cost extra?",
			want: "Does it cost extra?\n" + first, wantNote: "follow-up: the query adds the conversation's previous question"},
		{name: "a stand-alone question is searched as asked", message: "How do I reset my password?", want: "How do I reset my password?"},
		{name: "a fresh session has nothing to follow", fresh: true, message: "and how much is express?", want: "and how much is express?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			r.local.script(llmRound{deltas: []string{"Three to five days."}}, llmRound{deltas: []string{"Noted."}})
			ws := r.ws[domain.PlanStandard]
			req := Request{Session: conversation.SessionRef{Workspace: ws}, Message: tt.message}
			if !tt.fresh {
				earlier, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: ws}, Message: first})
				if err != nil {
					t.Fatal(err)
				}
				req.Session.ID = earlier.SessionID
			}
			ask := r.ask
			if tt.whole {
				ask = r.askWhole
			}
			ans, _, err := ask(t, req)
			if err != nil {
				t.Fatal(err)
			}
			calls := r.retriever.calls()
			// The retriever searches the question with its context, one
			// line after it.
			got := calls[len(calls)-1]
			if searched := strings.TrimSuffix(got.Text+"\n"+got.Context, "\n"); searched != tt.want || got.Text != tt.message {
				t.Errorf("retrieval query = %q with context %q, want %q", got.Text, got.Context, tt.want)
			}
			for _, tr := range []*domain.RetrievalTrace{ans.Reply.Trace, r.stored(t, ans.Reply.ID).Trace} {
				if tr == nil || tr.Question != tt.message || tr.Query != tt.want || tr.QueryNote != tt.wantNote {
					t.Errorf("trace = %+v, want question %q, query %q, note %q", tr, tt.message, tt.want, tt.wantNote)
				}
			}
			// The model answers the question as asked, with the history.
			reqs := r.local.calls()
			msgs := reqs[len(reqs)-1].Messages
			if last := msgs[len(msgs)-1]; last.Role != "user" || last.Content != tt.message {
				t.Errorf("the model was asked %+v, want %q", last, tt.message)
			}
		})
	}
}

// stored returns the stored message with the id.
func (r *rig) stored(t *testing.T, id string) domain.Message {
	t.Helper()
	for _, m := range r.convs.all() {
		if m.ID == id {
			// Stores read messages without their trace; it is read apart.
			if tr, err := r.convs.MessageTrace(t.Context(), m.WorkspaceID, m.ConversationID, m.ID); err == nil {
				m.Trace = &tr
			}
			return m
		}
	}
	t.Fatalf("message %s not stored", id)
	return domain.Message{}
}

// slowHistory is the rig's conversation store with a hook that runs before
// the recent messages are read.
type slowHistory struct {
	*memConversations
	loading func(ctx context.Context)
}

func (s slowHistory) RecentMessages(ctx context.Context, workspaceID, conversationID string, limit int) ([]domain.Message, error) {
	s.loading(ctx)
	return s.memConversations.RecentMessages(ctx, workspaceID, conversationID, limit)
}

// A stand-alone question's retrieval runs while the history loads (time to
// the first token depends on it); only a follow-up's waits for it.
func TestFollowUpRetrievalWaitsForHistory(t *testing.T) {
	r := newRig(t, Limits{})
	r.local.script(llmRound{deltas: []string{"a"}}, llmRound{deltas: []string{"b"}}, llmRound{deltas: []string{"c"}})
	var (
		mu            sync.Mutex
		historyLoaded bool
		searched      = make(chan string, 4)
		waitForSearch bool
	)
	store := slowHistory{memConversations: r.convs, loading: func(ctx context.Context) {
		mu.Lock()
		wait := waitForSearch
		mu.Unlock()
		if wait {
			// Blocks a retrieval that waits for the history for good: the
			// test then fails instead of passing slowly.
			select {
			case <-searched:
			case <-time.After(5 * time.Second):
				t.Error("the history was loaded before retrieval started")
			}
		}
		mu.Lock()
		historyLoaded = true
		mu.Unlock()
	}}
	r.retriever.before = func(context.Context) {
		mu.Lock()
		defer mu.Unlock()
		if waitForSearch {
			searched <- "started"
		}
		if !historyLoaded && !waitForSearch {
			t.Error("a follow-up was searched before the history was loaded")
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := NewService(Deps{
		Workspaces: r.workspace, Agents: r.agents, Conversations: store, Retriever: r.retriever,
		Models: map[string]ports.LLM{"local": r.local}, DefaultModel: "local",
		Lifecycle: conversation.New(conversation.Deps{
			Conversations: store, Workspaces: r.workspace, Agents: r.agents, Deliveries: r.queue, Bus: r.bus, Clock: r.clock, Log: log,
		}),
		Clock: r.clock, Log: log,
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ws := r.ws[domain.PlanStandard]
	mu.Lock()
	waitForSearch = true // a fresh session loads no history at all
	mu.Unlock()
	first, err := answerTurn(t.Context(), svc, Request{Session: conversation.SessionRef{Workspace: ws}, Message: "How long does standard delivery take?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-searched

	if _, err := answerTurn(t.Context(), svc, Request{Session: conversation.SessionRef{Workspace: ws, ID: first.SessionID}, Message: "How do I reset my password?"}, nil); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	waitForSearch, historyLoaded = false, false
	mu.Unlock()
	if _, err := answerTurn(t.Context(), svc, Request{Session: conversation.SessionRef{Workspace: ws, ID: first.SessionID}, Message: "and how much is express?"}, nil); err != nil {
		t.Fatal(err)
	}
	calls := r.retriever.calls()
	// The question stays the question; the earlier one is its context.
	if got := calls[len(calls)-1]; got.Text != "and how much is express?" || got.Context != "How do I reset my password?" {
		t.Errorf("follow-up query = %q with context %q", got.Text, got.Context)
	}
}

// An admin's retrieval searches the query as typed: its trace's question is
// the query, with no note.
func TestRetrieveTraceQuestionIsTheQuery(t *testing.T) {
	r := newRig(t, Limits{})
	a := r.agent[domain.PlanStandard]
	_, trace, err := r.svc.Retrieve(t.Context(), RetrieveRequest{WorkspaceID: a.WorkspaceID, AgentSlug: a.Slug, Query: "  and express?\n"})
	if err != nil {
		t.Fatal(err)
	}
	if trace.Question != "and express?" || trace.Query != "and express?" || trace.QueryNote != "" {
		t.Errorf("trace = %+v", trace)
	}
}
