package postgres_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// groupAll groups every pending question and returns how many.
func groupAll(t testing.TB, store *postgres.Store, now time.Time) int {
	t.Helper()
	n, err := store.GroupPendingQuestions(ctxT(t), now, 100, domain.ChooseTopic)
	if err != nil {
		t.Fatalf("GroupPendingQuestions: %v", err)
	}
	return n
}

func noAnswer() domain.Message {
	m := answer("Sorry, I don't have an answer to that.")
	m.FallbackReason = domain.FallbackNoKnowledge
	return m
}

// firstQuestion returns the conversation's first USER message.
func firstQuestion(t *testing.T, f conversationFixture, convID string) domain.Message {
	t.Helper()
	var id, content string
	if err := f.db.Raw(`SELECT id, content FROM messages WHERE conversation_id = ? AND role = 'USER' ORDER BY seq LIMIT 1`, convID).Row().Scan(&id, &content); err != nil {
		t.Fatal(err)
	}
	return domain.Message{ID: id, Content: content}
}

// TestUnansweredQuestionsTracked: the triggers record a question for a
// fallback (not HUMAN_ACTIVE), a rating down, and a handoff; nothing for a
// good answer or a playground conversation; the worker groups like
// questions into one topic with its reasons, counting a question that
// failed twice once.
func TestUnansweredQuestionsTracked(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	f := newConversationFixture(t)

	refund1 := startAnswered(t, f, "", "Can I get a refund?", noAnswer(), t0)
	refund2 := startAnswered(t, f, "", "How do refunds work?", answer("See the policy."), t0.Add(time.Minute))
	startAnswered(t, f, "", "How long does shipping take?", answer("Three days."), t0.Add(2*time.Minute))
	humanActive := answer("")
	humanActive.FallbackReason = "HUMAN_ACTIVE"
	startAnswered(t, f, "", "Are you there?", humanActive, t0.Add(3*time.Minute))
	hours := startAnswered(t, f, "", "What are your opening hours?", noAnswer(), t0.Add(4*time.Minute))

	// refund2's answer rated down; refund1 then handed off (its question
	// now fails for a second reason).
	var refund2Answer string
	if err := f.db.Raw(`SELECT id FROM messages WHERE conversation_id = ? AND role = 'ASSISTANT'`, refund2.ID).Row().Scan(&refund2Answer); err != nil {
		t.Fatal(err)
	}
	fb, _ := domain.NewFeedback("down", "", t0.Add(5*time.Minute))
	if err := f.store.SetFeedback(ctx, f.ws.ID, refund2.ID, refund2Answer, fb); err != nil {
		t.Fatal(err)
	}
	handoff := newMessage(f.ws.ID, refund1.ID, domain.RoleSystem, "Handed off", t0.Add(6*time.Minute))
	handoff.Status = domain.StatusHandoffRequested
	if _, err := f.store.AppendMessages(ctx, []domain.Message{handoff}, ""); err != nil {
		t.Fatal(err)
	}

	// A playground conversation's fallback is no unanswered question.
	play := domain.NewConversation(f.ws.ID, &f.agent, "", t0)
	play.Channel = domain.ChannelPlayground
	pq := newMessage(f.ws.ID, play.ID, domain.RoleUser, "Can I get a refund?", t0)
	pa := noAnswer()
	pa.WorkspaceID, pa.ConversationID, pa.CreatedAt = f.ws.ID, play.ID, t0
	if _, err := f.store.StartConversation(ctx, &play, []domain.Message{pq, pa}); err != nil {
		t.Fatal(err)
	}

	if n := groupAll(t, f.store, t0.Add(time.Hour)); n != 4 {
		t.Fatalf("grouped %d questions, want 4 (refund1 twice, refund2, hours)", n)
	}
	if n := groupAll(t, f.store, t0.Add(time.Hour)); n != 0 {
		t.Fatalf("a second grouping found %d", n)
	}
	page, err := f.store.ListTopics(ctx, domain.TopicQuery{WorkspaceID: f.ws.ID, AgentID: f.agent.ID, Order: domain.TopicsLargest, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.HasMore {
		t.Fatalf("topics = %+v", page)
	}
	refund, hoursTopic := page.Items[0], page.Items[1]
	if refund.Count != 2 || refund.Reasons[domain.ReasonFallback] != 1 || refund.Reasons[domain.ReasonRatedDown] != 1 ||
		refund.Reasons[domain.ReasonHandedOff] != 1 || refund.Status != domain.TopicOpen {
		t.Errorf("refund topic = %+v", refund)
	}
	if !refund.FirstSeenAt.Equal(micro(t0)) || !refund.LastSeenAt.Equal(micro(t0.Add(time.Minute))) {
		t.Errorf("refund topic seen %v .. %v", refund.FirstSeenAt, refund.LastSeenAt)
	}
	if hoursTopic.Count != 1 || hoursTopic.Label != "What are your opening hours?" {
		t.Errorf("hours topic = %+v", hoursTopic)
	}
	recent, err := f.store.ListTopics(ctx, domain.TopicQuery{WorkspaceID: f.ws.ID, AgentID: f.agent.ID, Order: domain.TopicsRecent, Limit: 1})
	if err != nil || len(recent.Items) != 1 || recent.Items[0].ID != hoursTopic.ID || !recent.HasMore {
		t.Fatalf("recent first page = %+v, %v", recent, err)
	}
	next, err := f.store.ListTopics(ctx, domain.TopicQuery{WorkspaceID: f.ws.ID, AgentID: f.agent.ID, Order: domain.TopicsRecent, Limit: 1, After: recent.Next})
	if err != nil || len(next.Items) != 1 || next.Items[0].ID != refund.ID || next.HasMore {
		t.Fatalf("recent second page = %+v, %v", next, err)
	}

	got, err := f.store.GetTopic(ctx, f.ws.ID, f.agent.ID, refund.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Examples) != 2 || got.Examples[0].ConversationID != refund2.ID || got.Examples[1].ConversationID != refund1.ID {
		t.Errorf("examples = %+v", got.Examples)
	}
	for _, tt := range []struct{ ws, agent, topic string }{{"ws_other", f.agent.ID, refund.ID}, {f.ws.ID, "agt_other", refund.ID}, {f.ws.ID, f.agent.ID, "utp_missing"}} {
		if _, err := f.store.GetTopic(ctx, tt.ws, tt.agent, tt.topic); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("GetTopic(%s, %s, %s) = %v, want ErrNotFound", tt.ws, tt.agent, tt.topic, err)
		}
	}

	// Answering the topic: addressed, linked to both conversations; a
	// like question after that starts a new open topic.
	src := domain.Source{ID: domain.NewID(domain.PrefixSource), WorkspaceID: f.ws.ID, AgentID: f.agent.ID, Type: domain.SourceQA,
		Name: "Refunds", Question: "Can I get a refund?", Answer: "Yes, within 30 days.", Status: domain.SourcePending, CreatedAt: t0, UpdatedAt: t0}
	if err := f.store.CreateSource(ctx, &src); err != nil {
		t.Fatal(err)
	}
	if err := f.store.AddressTopic(ctx, "ws_other", f.agent.ID, refund.ID, src.ID, t0.Add(2*time.Hour)); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another workspace's AddressTopic = %v", err)
	}
	if err := f.store.AddressTopic(ctx, f.ws.ID, f.agent.ID, refund.ID, src.ID, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, _ = f.store.GetTopic(ctx, f.ws.ID, f.agent.ID, refund.ID)
	if got.Status != domain.TopicAddressed || got.SourceID != src.ID || !got.AddressedAt.Equal(micro(t0.Add(2*time.Hour))) {
		t.Errorf("addressed topic = %+v", got)
	}
	var links int
	if err := f.db.Raw(`SELECT count(*) FROM unanswered_topic_sources WHERE source_id = ? AND topic_id = ?`, src.ID, refund.ID).Row().Scan(&links); err != nil || links != 2 {
		t.Errorf("links = %d (%v), want 2", links, err)
	}
	startAnswered(t, f, "", "Can I get a refund?", noAnswer(), t0.Add(3*time.Hour))
	groupAll(t, f.store, t0.Add(4*time.Hour))
	open, _ := f.store.ListTopics(ctx, domain.TopicQuery{WorkspaceID: f.ws.ID, AgentID: f.agent.ID, Status: domain.TopicOpen, Limit: 10})
	if len(open.Items) != 2 || open.Items[0].ID == refund.ID || open.Items[0].Label != "Can I get a refund?" {
		t.Errorf("open topics after the answer = %+v", open.Items)
	}

	// Deleting the source leaves the topic addressed, without a source.
	if _, err := f.store.DeleteSource(ctx, f.ws.ID, f.agent.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.store.GetTopic(ctx, f.ws.ID, f.agent.ID, refund.ID); got.Status != domain.TopicAddressed || got.SourceID != "" {
		t.Errorf("topic after its source was deleted = %+v", got)
	}
	if err := f.store.CreateSource(ctx, &src); err != nil {
		t.Fatal(err)
	}

	// Improving one answer: the question is checked, linked, its topic addressed.
	hq := firstQuestion(t, f, hours.ID)
	if q, err := f.store.Question(ctx, f.ws.ID, f.agent.ID, hours.ID, hq.ID); err != nil || q.TopicID != hoursTopic.ID || q.Text != "What are your opening hours?" {
		t.Errorf("Question = %+v, %v", q, err)
	}
	for _, tt := range []struct{ name, conv, msg string }{
		{"another conversation", refund1.ID, hq.ID},
		{"an answer, not a question", hours.ID, refund2Answer},
		{"unknown", hours.ID, "msg_missing"},
	} {
		if _, err := f.store.Question(ctx, f.ws.ID, f.agent.ID, tt.conv, tt.msg); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s: Question = %v, want ErrNotFound", tt.name, err)
		}
	}
	if topic, err := f.store.AddressQuestion(ctx, f.ws.ID, f.agent.ID, hours.ID, hq.ID, src.ID, t0.Add(5*time.Hour)); err != nil || topic != hoursTopic.ID {
		t.Fatalf("AddressQuestion = %q, %v", topic, err)
	}
	if got, _ := f.store.GetTopic(ctx, f.ws.ID, f.agent.ID, hoursTopic.ID); got.Status != domain.TopicAddressed {
		t.Errorf("hours topic after AddressQuestion = %+v", got)
	}
	if _, err := f.store.AddressQuestion(ctx, "ws_other", f.agent.ID, hours.ID, hq.ID, src.ID, t0); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another workspace's AddressQuestion = %v", err)
	}
}

// TestUnansweredConcurrentGrouping: two workers grouping at once group
// every question once, and like questions still make one topic (the
// per-agent lock).
func TestUnansweredConcurrentGrouping(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	for i := range 40 {
		startAnswered(t, f, "", fmt.Sprintf("Can I get a refund for order %d?", i%2), noAnswer(), t0.Add(time.Duration(i)*time.Second))
	}
	done := make(chan int, 2)
	for range 2 {
		go func() {
			n, err := f.store.GroupPendingQuestions(ctxT(t), t0, 7, domain.ChooseTopic)
			total := n
			for err == nil && n > 0 {
				n, err = f.store.GroupPendingQuestions(ctxT(t), t0, 7, domain.ChooseTopic)
				total += n
			}
			if err != nil {
				t.Error(err)
			}
			done <- total
		}()
	}
	if total := <-done + <-done; total != 40 {
		t.Errorf("grouped %d, want 40", total)
	}
	page, err := f.store.ListTopics(ctxT(t), domain.TopicQuery{WorkspaceID: f.ws.ID, AgentID: f.agent.ID, Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].Count != 40 {
		t.Errorf("topics = %+v, %v; want one of 40", page.Items, err)
	}
}

// BenchmarkGroupQuestion measures grouping one question for an agent with
// 10,000 open topics: the candidates are the domain.TopicCandidates most
// recently active (an index walk), so the cost does not grow with the
// topics. Each iteration groups one pending question in its own
// transaction, as the worker's sweep does in batches.
func BenchmarkGroupQuestion(b *testing.B) {
	for _, topics := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("topics=%d", topics), func(b *testing.B) { benchmarkGroupQuestion(b, topics) })
	}
}

func benchmarkGroupQuestion(b *testing.B, seeded int) {
	ctx := ctxT(b)
	pg := pgtest.NewDB(b)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(b, store, domain.PlanStandard)
	agent := newAgent(b, store, ws.ID, "support", t0)
	conv := domain.NewConversation(ws.ID, &agent, "", t0)
	if err := store.CreateConversation(ctx, &conv); err != nil {
		b.Fatal(err)
	}
	// seeded open topics of three words each out of a vocabulary of 3,000.
	if _, err := pg.Pool.Exec(ctx, `INSERT INTO unanswered_topics (id, workspace_id, agent_id, label, terms, question_count, fallback_count, first_seen_at, last_seen_at)
		SELECT 'utp_bench' || i, $1, $2, 'question ' || i,
			jsonb_build_object('w' || (i * 7 % 3000), 1, 'w' || (i * 13 % 3000), 1, 'w' || (i * 31 % 3000), 1), 1, 1,
			$3::timestamptz + i * interval '1 second', $3::timestamptz + i * interval '1 second'
		FROM generate_series(1, $4::integer) AS i`, ws.ID, agent.ID, t0, seeded); err != nil {
		b.Fatal(err)
	}
	if _, err := pg.Pool.Exec(ctx, `INSERT INTO unanswered_questions (message_id, reason, workspace_id, agent_id, conversation_id, question, asked_at, recorded_at)
		SELECT 'msg_bench' || i, 'FALLBACK', $1, $2, $3, 'Where do I find the serial number ' || i || ' of the blender?',
			$4::timestamptz + interval '1 day', $4::timestamptz + i * interval '1 microsecond'
		FROM generate_series(1, $5::integer) AS i`, ws.ID, agent.ID, conv.ID, t0, b.N); err != nil {
		b.Fatal(err)
	}
	if _, err := pg.Pool.Exec(ctx, `ANALYZE unanswered_topics; ANALYZE unanswered_questions`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if n, err := store.GroupPendingQuestions(ctx, t0, 1, domain.ChooseTopic); err != nil || n != 1 {
			b.Fatalf("GroupPendingQuestions = %d, %v", n, err)
		}
	}
	b.StopTimer()
	var topics int
	if err := pg.Pool.QueryRow(ctx, `SELECT count(*) FROM unanswered_topics WHERE agent_id = $1`, agent.ID).Scan(&topics); err != nil || topics < seeded {
		b.Fatalf("%d topics (%v)", topics, err)
	}
}
