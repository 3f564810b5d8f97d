package unanswered_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/unanswered"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var now = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

// fakeAgents knows the agent "support" of ws_1 and records sources.
type fakeAgents struct{ added []domain.Source }

func (f *fakeAgents) Get(_ context.Context, ws, slug string) (domain.Agent, error) {
	if ws != "ws_1" || slug != "support" {
		return domain.Agent{}, domain.NotFound("agent")
	}
	return domain.Agent{ID: "agt_1", WorkspaceID: ws, Slug: slug}, nil
}

func (f *fakeAgents) AddSource(_ context.Context, ws, slug string, src domain.Source) (domain.Source, error) {
	if err := src.Validate(); err != nil {
		return domain.Source{}, err
	}
	src.ID, src.WorkspaceID, src.AgentID = domain.NewID(domain.PrefixSource), ws, "agt_1"
	f.added = append(f.added, src)
	return src, nil
}

// fakeStore holds one topic and one question of agt_1; it records the
// grouping batches and what was addressed.
type fakeStore struct {
	topic     domain.UnansweredTopic
	question  domain.UnansweredQuestion
	pending   []int // questions left per call
	addressed []string
	query     domain.TopicQuery
}

func (f *fakeStore) GroupPendingQuestions(_ context.Context, _ time.Time, limit int,
	choose func(domain.UnansweredQuestion, []domain.UnansweredTopic) domain.TopicChoice) (int, error) {
	if len(f.pending) == 0 {
		return 0, nil
	}
	n := min(f.pending[0], limit)
	f.pending = f.pending[1:]
	return n, nil
}

func (f *fakeStore) ListTopics(_ context.Context, q domain.TopicQuery) (domain.TopicPage, error) {
	f.query = q
	return domain.TopicPage{Items: []domain.UnansweredTopic{f.topic}}, nil
}

func (f *fakeStore) GetTopic(_ context.Context, ws, agentID, id string) (domain.UnansweredTopic, error) {
	if ws != f.topic.WorkspaceID || agentID != f.topic.AgentID || id != f.topic.ID {
		return domain.UnansweredTopic{}, domain.NotFound("topic")
	}
	return f.topic, nil
}

func (f *fakeStore) AddressTopic(_ context.Context, ws, agentID, id, sourceID string, at time.Time) error {
	f.topic.Status, f.topic.SourceID, f.topic.AddressedAt = domain.TopicAddressed, sourceID, at
	f.addressed = append(f.addressed, id)
	return nil
}

func (f *fakeStore) Question(_ context.Context, ws, agentID, conv, msg string) (domain.UnansweredQuestion, error) {
	if ws != "ws_1" || agentID != "agt_1" || conv != f.question.ConversationID || msg != f.question.MessageID {
		return domain.UnansweredQuestion{}, domain.NotFound("message")
	}
	return f.question, nil
}

func (f *fakeStore) AddressQuestion(_ context.Context, ws, agentID, conv, msg, sourceID string, at time.Time) (string, error) {
	f.addressed = append(f.addressed, msg)
	return f.question.TopicID, nil
}

func newFixture() (*unanswered.Service, *fakeStore, *fakeAgents) {
	topicID := domain.NewID(domain.PrefixTopic)
	st := &fakeStore{
		topic: domain.UnansweredTopic{ID: topicID, WorkspaceID: "ws_1", AgentID: "agt_1", Label: "Gift wrap?", Status: domain.TopicOpen},
		question: domain.UnansweredQuestion{ConversationID: domain.NewID(domain.PrefixSession), MessageID: domain.NewID(domain.PrefixMessage),
			Text: "Gift wrap?", TopicID: topicID},
	}
	ag := &fakeAgents{}
	return unanswered.NewService(st, ag, fixedClock{now}, slog.New(slog.DiscardHandler), 10), st, ag
}

func TestSweepBatches(t *testing.T) {
	s, st, _ := newFixture()
	st.pending = []int{10, 10, 3, 10}
	n, err := s.Sweep(context.Background())
	if err != nil || n != 23 {
		t.Fatalf("Sweep = %d, %v; want 23 (stops at the short batch)", n, err)
	}
}

func TestList(t *testing.T) {
	tests := []struct {
		name    string
		req     unanswered.ListRequest
		wantErr error
		field   string
		order   domain.TopicOrder
		limit   int
	}{
		{"defaults", unanswered.ListRequest{AgentSlug: "support"}, nil, "", domain.TopicsRecent, domain.DefaultPageLimit},
		{"largest, addressed", unanswered.ListRequest{AgentSlug: "support", Order: domain.TopicsLargest, Status: domain.TopicAddressed, Limit: 5}, nil, "", domain.TopicsLargest, 5},
		{"bad order", unanswered.ListRequest{AgentSlug: "support", Order: "oldest"}, domain.ErrInvalidInput, "order", "", 0},
		{"bad status", unanswered.ListRequest{AgentSlug: "support", Status: "CLOSED"}, domain.ErrInvalidInput, "status", "", 0},
		{"bad limit", unanswered.ListRequest{AgentSlug: "support", Limit: 101}, domain.ErrInvalidInput, "limit", "", 0},
		{"unknown agent", unanswered.ListRequest{AgentSlug: "sales"}, domain.ErrNotFound, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st, _ := newFixture()
			_, err := s.List(context.Background(), "ws_1", tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.field) {
					t.Fatalf("List = %v, want %v naming %q", err, tt.wantErr, tt.field)
				}
				return
			}
			if err != nil || st.query.Order != tt.order || st.query.Limit != tt.limit || st.query.AgentID != "agt_1" || st.query.WorkspaceID != "ws_1" {
				t.Fatalf("List = %v; query %+v", err, st.query)
			}
		})
	}
}

// Answer makes no source for an unknown topic or bad fields; a good
// answer makes a qa source and addresses the topic.
func TestAnswer(t *testing.T) {
	good := domain.TopicAnswer{Question: "Do you gift wrap?", Answer: "Yes."}
	tests := []struct {
		name    string
		ws      string
		topic   func(st *fakeStore) string
		answer  domain.TopicAnswer
		wantErr error
	}{
		{"good", "ws_1", func(st *fakeStore) string { return st.topic.ID }, good, nil},
		{"unknown topic", "ws_1", func(*fakeStore) string { return domain.NewID(domain.PrefixTopic) }, good, domain.ErrNotFound},
		{"not a topic id", "ws_1", func(*fakeStore) string { return "utp_x" }, good, domain.ErrNotFound},
		{"another workspace", "ws_2", func(st *fakeStore) string { return st.topic.ID }, good, domain.ErrNotFound},
		{"no answer", "ws_1", func(st *fakeStore) string { return st.topic.ID }, domain.TopicAnswer{Question: "Q?"}, domain.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st, ag := newFixture()
			topic, src, err := s.Answer(context.Background(), tt.ws, "support", tt.topic(st), tt.answer)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || len(ag.added) != 0 || len(st.addressed) != 0 {
					t.Fatalf("Answer = %v (sources %v, addressed %v), want %v and nothing written", err, ag.added, st.addressed, tt.wantErr)
				}
				return
			}
			if err != nil || src.Type != domain.SourceQA || src.Question != good.Question || src.Answer != good.Answer ||
				topic.Status != domain.TopicAddressed || topic.SourceID != src.ID || !topic.AddressedAt.Equal(now) {
				t.Fatalf("Answer = %+v, %+v, %v", topic, src, err)
			}
		})
	}
}

func TestImproveAnswer(t *testing.T) {
	good := domain.TopicAnswer{Question: "Do you gift wrap?", Answer: "Yes."}
	s, st, ag := newFixture()
	if _, _, err := s.ImproveAnswer(context.Background(), "ws_1", "support", st.question.ConversationID, domain.NewID(domain.PrefixMessage), good); !errors.Is(err, domain.ErrNotFound) || len(ag.added) != 0 {
		t.Fatalf("unknown question: %v, sources %v", err, ag.added)
	}
	if _, _, err := s.ImproveAnswer(context.Background(), "ws_1", "support", "nope", st.question.MessageID, good); !errors.Is(err, domain.ErrNotFound) || len(ag.added) != 0 {
		t.Fatalf("bad conversation id: %v", err)
	}
	src, topic, err := s.ImproveAnswer(context.Background(), "ws_1", "support", st.question.ConversationID, st.question.MessageID, good)
	if err != nil || topic != st.topic.ID || len(ag.added) != 1 || ag.added[0].ID != src.ID || len(st.addressed) != 1 {
		t.Fatalf("ImproveAnswer = %+v, %q, %v", src, topic, err)
	}
}
