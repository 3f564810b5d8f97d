package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/unanswered"
)

// The service the wiring passes fits the console's interface.
var _ console.Unanswered = (*unanswered.Service)(nil)

// fakeUnansweredStore is the topic store behind the real unanswered
// service in the console's tests: ws_a's agent "support" has one open
// topic with one question, in conversation unansConv.
type fakeUnansweredStore struct {
	mu        sync.Mutex
	topics    map[string]domain.UnansweredTopic
	questions map[string]domain.UnansweredQuestion // by message id
	addressed []string                             // topic ids, in order
	linked    []string                             // message ids, in order
}

var (
	unansTopic    = "utp_" + strings.Repeat("0", 25) + "a"
	unansConv     = "ses_" + strings.Repeat("0", 25) + "a"
	unansQuestion = "msg_" + strings.Repeat("0", 25) + "a"
)

func (f *fakeUnansweredStore) GroupPendingQuestions(context.Context, time.Time, int,
	func(domain.UnansweredQuestion, []domain.UnansweredTopic) domain.TopicChoice) (int, error) {
	return 0, nil
}

func (f *fakeUnansweredStore) ListTopics(_ context.Context, q domain.TopicQuery) (domain.TopicPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var p domain.TopicPage
	for _, t := range f.topics {
		if t.WorkspaceID == q.WorkspaceID && t.AgentID == q.AgentID && (q.Status == "" || t.Status == q.Status) {
			t.Examples = nil
			p.Items = append(p.Items, t)
		}
	}
	return p, nil
}

func (f *fakeUnansweredStore) GetTopic(_ context.Context, ws, agentID, id string) (domain.UnansweredTopic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[id]
	if !ok || t.WorkspaceID != ws || t.AgentID != agentID {
		return domain.UnansweredTopic{}, domain.NotFound("topic")
	}
	return t, nil
}

func (f *fakeUnansweredStore) AddressTopic(_ context.Context, ws, agentID, id, sourceID string, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[id]
	if !ok || t.WorkspaceID != ws || t.AgentID != agentID {
		return domain.NotFound("topic")
	}
	t.Status, t.SourceID, t.AddressedAt = domain.TopicAddressed, sourceID, now
	f.topics[id] = t
	f.addressed = append(f.addressed, id)
	return nil
}

func (f *fakeUnansweredStore) Question(_ context.Context, ws, agentID, conv, msg string) (domain.UnansweredQuestion, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.questions[msg]
	if !ok || q.WorkspaceID != ws || q.AgentID != agentID || q.ConversationID != conv {
		return domain.UnansweredQuestion{}, domain.NotFound("message")
	}
	return q, nil
}

func (f *fakeUnansweredStore) AddressQuestion(ctx context.Context, ws, agentID, conv, msg, sourceID string, now time.Time) (string, error) {
	q, err := f.Question(ctx, ws, agentID, conv, msg)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	f.linked = append(f.linked, msg)
	f.mu.Unlock()
	if q.TopicID != "" {
		return q.TopicID, f.AddressTopic(ctx, ws, agentID, q.TopicID, sourceID, now)
	}
	return "", nil
}

// unansweredHarness is a harness with the agent "support" of ws_a, its
// topic and question, and the real unanswered service over the fake store.
func unansweredHarness(t *testing.T) (*harness, *fakeUnansweredStore) {
	t.Helper()
	store := &fakeUnansweredStore{topics: map[string]domain.UnansweredTopic{}, questions: map[string]domain.UnansweredQuestion{}}
	h := newHarnessWith(t, publicURL, harnessOptions{unanswered: func(agents unanswered.Agents) console.Unanswered {
		return unanswered.NewService(store, agents, fixedClock{fakeNow}, nil, 0)
	}})
	h.seedAgent(t, "support", "Support", true)
	a, err := h.agents.Get(context.Background(), "ws_a", "support")
	if err != nil {
		t.Fatal(err)
	}
	q := domain.UnansweredQuestion{WorkspaceID: "ws_a", AgentID: a.ID, ConversationID: unansConv, MessageID: unansQuestion,
		Reason: domain.ReasonFallback, Text: "Do you <b>gift</b> wrap?", AskedAt: fakeNow, TopicID: unansTopic}
	store.questions[unansQuestion] = q
	store.topics[unansTopic] = domain.UnansweredTopic{ID: unansTopic, WorkspaceID: "ws_a", AgentID: a.ID, Label: q.Text, Count: 3,
		Reasons:     map[domain.UnansweredReason]int{domain.ReasonFallback: 2, domain.ReasonHandedOff: 1},
		FirstSeenAt: fakeNow.Add(-time.Hour), LastSeenAt: fakeNow, Status: domain.TopicOpen, Examples: []domain.UnansweredQuestion{q}}
	return h, store
}

const unansweredPath = "/console/w/ws_a/agents/support/unanswered"

func answerForm(question, answer string) url.Values {
	return url.Values{"question": {question}, "answer": {answer}}
}

// The role matrix of the unanswered routes: every member reads the
// topics; owners and admins write answers (a topic's, or one answer's of
// a conversation); agents are refused those before the service is asked;
// another workspace's owner gets 404; signed out goes to sign-in.
func TestUnansweredRoleMatrix(t *testing.T) {
	const ok, see, forbid, nf = http.StatusOK, http.StatusSeeOther, http.StatusForbidden, http.StatusNotFound
	type want = roleStatuses
	improve := "/console/w/ws_a/agents/support/improve?conversation=" + unansConv + "&question=" + unansQuestion
	good := answerForm("Do you gift wrap?", "Yes, for 3 euros.")
	routes := []struct {
		method, path string
		form         url.Values
		want         want
	}{
		{"GET", "/console/w/ws_a/unanswered", nil, want{ok, ok, ok, nf, see}},
		{"GET", unansweredPath, nil, want{ok, ok, ok, nf, see}},
		{"GET", unansweredPath + "?order=largest", nil, want{ok, ok, ok, nf, see}},
		{"GET", unansweredPath + "/" + unansTopic, nil, want{ok, ok, ok, nf, see}},
		{"POST", unansweredPath + "/" + unansTopic + "/answer", good, want{see, see, forbid, nf, see}},
		{"GET", improve, nil, want{ok, ok, forbid, nf, see}},
		{"POST", improve, good, want{see, see, forbid, nf, see}},
		// Unknown agent, topic, question.
		{"GET", "/console/w/ws_a/agents/nope/unanswered", nil, want{nf, nf, nf, nf, see}},
		{"GET", unansweredPath + "/utp_nope", nil, want{nf, nf, nf, nf, see}},
		{"POST", unansweredPath + "/utp_nope/answer", good, want{nf, nf, forbid, nf, see}},
		{"GET", "/console/w/ws_a/agents/support/improve?conversation=" + unansConv + "&question=msg_nope", nil, want{nf, nf, forbid, nf, see}},
	}
	for _, rt := range routes {
		for _, who := range rt.want.roles() {
			t.Run(rt.method+" "+rt.path+" as "+who.name, func(t *testing.T) {
				h, store := unansweredHarness(t)
				r := h.do(t, req{Method: rt.method, Path: rt.path, As: who.as, Form: rt.form, Header: map[string]string{"Sec-Fetch-Site": "same-origin"}})
				if r.Status != who.want {
					t.Fatalf("status %d, want %d; Location %q; body:\n%s", r.Status, who.want, r.location(), r.Body)
				}
				if who.as == "" && !strings.HasPrefix(r.location(), "/console/sign-in") {
					t.Fatalf("signed out: Location %q, want the sign-in page", r.location())
				}
				if who.want == ok {
					checkPage(t, r, who.as)
				}
				if who.want != see && (len(store.addressed) > 0 || len(h.agents.src().added) > 0) {
					t.Fatalf("a refused request wrote: addressed %v, sources %v", store.addressed, h.agents.src().added)
				}
				if rt.method == "POST" && who.want == see && who.as != "" && len(h.agents.src().added) != 1 {
					t.Fatalf("sources added: %v", h.agents.src().added)
				}
			})
		}
	}
}

// The list and the topic page show the counts, reasons and examples
// (escaped), link the conversations, and show the form to those who may
// answer; a good answer makes a Q&A source and addresses the topic; bad
// input shows the form again with the field's message and writes nothing;
// a missing CSRF token is refused.
func TestUnansweredPages(t *testing.T) {
	h, store := unansweredHarness(t)
	list := h.do(t, req{Path: unansweredPath, As: "agent"})
	if list.Status != http.StatusOK {
		t.Fatalf("list: %d\n%s", list.Status, list.Body)
	}
	for _, s := range []string{"Do you &lt;b&gt;gift&lt;/b&gt; wrap?", "<td>3</td>", "no answer 2, handed to a person 1", "Open",
		`href="/console/w/ws_a/agents/support/unanswered/` + unansTopic + `"`, "Most questions first"} {
		if !strings.Contains(list.Body, s) {
			t.Errorf("list: no %q", s)
		}
	}
	if strings.Contains(list.Body, "<b>gift</b>") {
		t.Error("list: a question shown unescaped")
	}
	if r := h.do(t, req{Path: unansweredPath + "?order=oldest", As: "agent"}); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "must be recent or largest") {
		t.Errorf("bad order: %d\n%s", r.Status, r.Body)
	}
	page := h.do(t, req{Path: unansweredPath + "/" + unansTopic, As: "agent"})
	if !strings.Contains(page.Body, `href="/console/w/ws_a/conversations/`+unansConv+`"`) || strings.Contains(page.Body, `name="answer"`) ||
		!strings.Contains(page.Body, "Owners and admins write answers") {
		t.Errorf("agent's topic page:\n%s", page.Body)
	}
	page = h.do(t, req{Path: unansweredPath + "/" + unansTopic, As: "admin"})
	if !strings.Contains(page.Body, `name="answer"`) || !strings.Contains(page.Body, ">Do you &lt;b&gt;gift&lt;/b&gt; wrap?</textarea>") {
		t.Errorf("admin's topic page has no prefilled form:\n%s", page.Body)
	}

	path := unansweredPath + "/" + unansTopic + "/answer"
	for _, tt := range []struct {
		name  string
		form  url.Values
		field string
	}{
		{"no answer", answerForm("Do you gift wrap?", " "), `id="f-answer-error">is required`},
		{"no question", answerForm("", "Yes."), `id="f-question-error">is required`},
		{"too long", answerForm("Do you gift wrap?", strings.Repeat("a", domain.MaxAnswerLength+1)), `id="f-answer-error">must be at most 20000 characters`},
	} {
		r := h.do(t, req{Method: "POST", Path: path, As: "admin", Form: tt.form})
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, tt.field) {
			t.Errorf("%s: %d\n%s", tt.name, r.Status, r.Body)
		}
	}
	if r := h.do(t, req{Method: "POST", Path: path, As: "admin", Form: answerForm("Q?", "A."), NoCSRF: true}); r.Status != http.StatusForbidden {
		t.Errorf("no CSRF token: %d", r.Status)
	}
	if len(store.addressed) != 0 || len(h.agents.src().added) != 0 {
		t.Fatalf("refused answers wrote: %v %v", store.addressed, h.agents.src().added)
	}
	r := h.do(t, req{Method: "POST", Path: path, As: "admin", Form: answerForm("Do you gift wrap?", "Yes, for 3 euros.")})
	if r.Status != http.StatusSeeOther || r.location() != unansweredPath+"/"+unansTopic+"?done=topicanswered" {
		t.Fatalf("answer: %d %q", r.Status, r.location())
	}
	added := h.agents.src().added
	if len(added) != 1 || added[0].Type != domain.SourceQA || added[0].Question != "Do you gift wrap?" || added[0].Answer != "Yes, for 3 euros." {
		t.Fatalf("source = %+v", added)
	}
	after := h.follow(t, r, "admin")
	if !strings.Contains(after.Body, "The answer is added to the knowledge and the topic is addressed.") || !strings.Contains(after.Body, "Addressed") {
		t.Errorf("after the answer:\n%s", after.Body)
	}
}

// Improving one answer: the form is prefilled with the visitor's question;
// saving makes a Q&A source linked to it and returns to the conversation.
func TestImproveOneAnswer(t *testing.T) {
	h, store := unansweredHarness(t)
	improve := "/console/w/ws_a/agents/support/improve?conversation=" + unansConv + "&question=" + unansQuestion
	page := h.do(t, req{Path: improve, As: "owner"})
	if page.Status != http.StatusOK || !strings.Contains(page.Body, ">Do you &lt;b&gt;gift&lt;/b&gt; wrap?</textarea>") {
		t.Fatalf("improve page: %d\n%s", page.Status, page.Body)
	}
	r := h.do(t, req{Method: "POST", Path: improve, As: "owner", Form: answerForm("Do you gift wrap?", "Yes.")})
	if r.Status != http.StatusSeeOther || r.location() != "/console/w/ws_a/conversations/"+unansConv+"?done=improved" {
		t.Fatalf("improve: %d %q\n%s", r.Status, r.location(), r.Body)
	}
	if len(store.linked) != 1 || store.linked[0] != unansQuestion || len(store.addressed) != 1 {
		t.Errorf("linked %v, addressed %v", store.linked, store.addressed)
	}
}

// A transcript's answers link the improve form of the question before
// them, for owners and admins only, and never in a playground transcript.
func TestImproveLinks(t *testing.T) {
	h, _ := unansweredHarness(t)
	chat := h.convs.add(domain.Conversation{WorkspaceID: "ws_a", AgentSlug: "support"},
		domain.Message{ID: unansQuestion, Role: domain.RoleUser, Content: "Do you gift wrap?", CreatedAt: fakeNow},
		domain.Message{Role: domain.RoleAssistant, Content: "Sorry.", FallbackReason: domain.FallbackNoKnowledge, CreatedAt: fakeNow})
	play := h.convs.add(domain.Conversation{WorkspaceID: "ws_a", AgentSlug: "support", Channel: domain.ChannelPlayground},
		domain.Message{Role: domain.RoleUser, Content: "Test?", CreatedAt: fakeNow},
		domain.Message{Role: domain.RoleAssistant, Content: "Sorry.", CreatedAt: fakeNow})
	link := `href="/console/w/ws_a/agents/support/improve?conversation=` + chat.ID + `&amp;question=` + unansQuestion + `"`
	for _, tt := range []struct {
		as, conv string
		want     bool
	}{{"owner", chat.ID, true}, {"admin", chat.ID, true}, {"agent", chat.ID, false}, {"owner", play.ID, false}} {
		r := h.do(t, req{Path: "/console/w/ws_a/conversations/" + tt.conv, As: tt.as})
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d", tt.as, r.Status)
		}
		if got := strings.Contains(r.Body, "Improve this answer"); got != tt.want {
			t.Errorf("%s on %s: link shown %v, want %v", tt.as, tt.conv, got, tt.want)
		}
		if tt.want && !strings.Contains(r.Body, link) {
			t.Errorf("%s: no %s in\n%s", tt.as, link, r.Body)
		}
	}
}
