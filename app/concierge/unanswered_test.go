package main

import (
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// TestImproveAnswerLoop is issue 18's loop end to end, through the real
// binaries' HTTP API and worker: a question the agent cannot answer falls
// back; the worker groups it (and a paraphrase) into one topic; an admin
// answers the topic; the worker indexes the new Q&A source; the same
// question and a paraphrase are then answered from it, citing it; the
// topic is addressed. Bad input and another workspace get their errors.
func TestImproveAnswerLoop(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanEnterprise)
	other := s.newTenant(domain.PlanEnterprise)
	supportAgent(s, tn)
	ask := func(message string) answerBody {
		t.Helper()
		r, a := s.chat(tn, map[string]any{"agent": "support", "message": message})
		s.mustStatus(r, 200)
		return a
	}
	const question = "Do you offer gift wrapping?"
	const paraphrase = "Can you gift wrap my order?"
	for _, q := range []string{question, paraphrase} {
		if a := ask(q); !a.IsFallback {
			t.Fatalf("%q was answered before the team wrote an answer: %+v", q, a)
		}
	}
	// An answered question is no unanswered one.
	if a := ask("How long does shipping take?"); a.IsFallback {
		t.Fatalf("shipping question fell back: %+v", a)
	}

	// The worker groups both failures into one topic within seconds.
	var topic map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.do("GET", "/api/v2/agents/support/unanswered-topics", nil, tn.auth())
		s.mustStatus(r, 200)
		data := r.JSON(t)["data"].([]any)
		if len(data) == 1 && data[0].(map[string]any)["count"] == float64(2) {
			topic = data[0].(map[string]any)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topics after 20 s: %v", data)
		}
		time.Sleep(100 * time.Millisecond)
	}
	id := topic["id"].(string)
	if topic["status"] != "OPEN" || topic["sourceId"] != nil || topic["reasons"].(map[string]any)["FALLBACK"] != float64(2) {
		t.Fatalf("topic = %v", topic)
	}
	detail := s.do("GET", "/api/v2/agents/support/unanswered-topics/"+id, nil, tn.auth())
	s.mustStatus(detail, 200)
	if ex := detail.JSON(t)["examples"].([]any); len(ex) != 2 || ex[0].(map[string]any)["question"] != paraphrase {
		t.Fatalf("examples = %v", ex)
	}

	// Bad input, another workspace, unknown topics.
	answerPath := "/api/v2/agents/support/unanswered-topics/" + id + "/answer"
	for _, tt := range []struct {
		name   string
		path   string
		body   any
		auth   header
		status int
		text   string
	}{
		{"no answer", answerPath, map[string]any{"question": question}, tn.auth(), 400, "answer is required"},
		{"blank question", answerPath, map[string]any{"question": "  ", "answer": "Yes."}, tn.auth(), 400, "question is required"},
		{"unknown field", answerPath, map[string]any{"question": question, "answer": "Yes.", "x": 1}, tn.auth(), 400, ""},
		{"too long", answerPath, map[string]any{"question": question, "answer": strings.Repeat("a", 20001)}, tn.auth(), 400, "answer must be at most"},
		{"another workspace", answerPath, map[string]any{"question": question, "answer": "Yes."}, other.auth(), 404, ""},
		{"unknown topic", "/api/v2/agents/support/unanswered-topics/utp_00000000000000000000000000/answer", map[string]any{"question": question, "answer": "Yes."}, tn.auth(), 404, ""},
		{"no key", answerPath, map[string]any{"question": question, "answer": "Yes."}, nil, 401, ""},
	} {
		r := s.do("POST", tt.path, tt.body, tt.auth)
		if r.Status != tt.status || (tt.text != "" && !strings.Contains(string(r.Body), tt.text)) {
			t.Errorf("%s: %d %s, want %d with %q", tt.name, r.Status, r.Body, tt.status, tt.text)
		}
	}
	for _, tt := range []struct{ name, path string }{
		{"bad order", "/api/v2/agents/support/unanswered-topics?order=oldest"},
		{"bad status", "/api/v2/agents/support/unanswered-topics?status=closed"},
		{"bad limit", "/api/v2/agents/support/unanswered-topics?limit=0"},
		{"bad cursor", "/api/v2/agents/support/unanswered-topics?cursor=abc"},
	} {
		if r := s.do("GET", tt.path, nil, tn.auth()); r.Status != 400 {
			t.Errorf("%s: %d %s, want 400", tt.name, r.Status, r.Body)
		}
	}
	if r := s.do("GET", "/api/v2/agents/support/unanswered-topics/"+id, nil, other.auth()); r.Status != 404 {
		t.Errorf("another workspace read the topic: %d", r.Status)
	}
	if r := s.do("GET", "/api/v2/agents/support/sources?limit=100", nil, tn.auth()); len(r.JSON(t)["data"].([]any)) != 3 {
		t.Fatalf("refused answers created sources: %s", r.Body)
	}

	// The admin answers the topic.
	r := s.do("POST", answerPath, map[string]any{"question": question,
		"answer": "Yes: gift wrapping costs 3 euros per order; choose it at checkout."}, tn.auth())
	s.mustStatus(r, 201)
	res := r.JSON(t)
	src := res["source"].(map[string]any)
	if res["topic"].(map[string]any)["status"] != "ADDRESSED" || res["topic"].(map[string]any)["sourceId"] != src["id"] || src["type"] != "qa" {
		t.Fatalf("answer = %v", res)
	}
	if got := s.waitSource(tn, "support", src["id"].(string), 30*time.Second); got["status"] != "READY" {
		t.Fatalf("source = %v", got)
	}

	// The same question, and the paraphrase, are answered from it.
	for _, q := range []string{question, paraphrase} {
		a := ask(q)
		cited := false
		for _, c := range a.Citations {
			cited = cited || c.SourceID == src["id"]
		}
		if a.IsFallback || !cited || !strings.Contains(a.Message, "3 euros") {
			t.Errorf("%q after the answer: %+v", q, a)
		}
	}
	got := s.do("GET", "/api/v2/agents/support/unanswered-topics/"+id, nil, tn.auth())
	s.mustStatus(got, 200)
	if g := got.JSON(t); g["status"] != "ADDRESSED" || g["addressedAt"] == nil {
		t.Errorf("topic after the loop = %v", g)
	}
	addressed := s.do("GET", "/api/v2/agents/support/unanswered-topics?status=ADDRESSED&order=largest", nil, tn.auth())
	s.mustStatus(addressed, 200)
	if data := addressed.JSON(t)["data"].([]any); len(data) != 1 {
		t.Errorf("addressed topics = %v", data)
	}
}
