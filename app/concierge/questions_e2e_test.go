package main

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/conciergehq/concierge/adapters/openaicompat/mockllmtest"
	"github.com/conciergehq/concierge/core/domain"
)

// TestIndexTimeQuestions runs the service with CONCIERGE_INDEX_QUESTIONS and
// mock-llm as the OpenAI-compatible model writing them (its own model
// name; the answering model stays the embedded one): the worker asks once
// per text chunk, stores what the model wrote, and a customer's wording
// that only those questions use finds the chunk through
// POST /api/v2/agents/{slug}/retrieve, which lists them.
func TestIndexTimeQuestions(t *testing.T) {
	const path = "/v1/chat/completions"
	completion := func(content string) string {
		c, _ := json.Marshal(content)
		return `{"id":"chatcmpl-1","object":"chat.completion","model":"mock-small",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":` + string(c) + `},"finish_reason":"stop"}]}`
	}
	rule := func(match, content string) mockllmtest.Rule {
		return mockllmtest.Rule{Path: path, Method: "POST", Match: match, Response: mockllmtest.Response{Status: 200, Content: completion(content)}}
	}
	// The last matching rule answers: only the question writer's request
	// (its model, and the passage's text) gets questions. Any request
	// that neither rule expects fails loudly (a note on its source), so a
	// writer's request that missed its rule cannot pass as "no questions".
	mock := mockllmtest.Start(t, &mockllmtest.Config{Rules: []mockllmtest.Rule{
		{Path: path, Method: "POST", Match: "@", Response: mockllmtest.Response{Status: 500, Content: `{"error":{"message":"no rule for this request"}}`}},
		rule("body.model == 'mock-small' && contains(to_string(body.messages), 'unused item')", "I have nothing to add."),
		rule("body.model == 'mock-small' && contains(to_string(body.messages), 'warehouse')",
			"1. How fast do you dispatch parcels?\n2. When will my order be sent?"),
	}})
	s := newStack(t, stackOptions{withWorker: true, env: map[string]string{
		"CONCIERGE_OPENAI_BASE_URL": mock.URL + "/v1", "CONCIERGE_OPENAI_API_KEY": "sk-mock",
		"CONCIERGE_INDEX_QUESTIONS": "2", "CONCIERGE_INDEX_QUESTIONS_MODEL": "mock-small",
	}})
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	before := mock.Count(path)
	for _, src := range []map[string]any{
		{"type": "text", "name": "Orders", "content": "Orders leave our warehouse within one business day of payment."},
		{"type": "text", "name": "Returns", "content": "You can return any unused item within 30 days of delivery."},
		{"type": "qa", "question": "Do you sell gift cards?", "answer": "Yes, from 10 to 200 euros."},
	} {
		s.mustStatus(s.do("POST", "/api/v2/agents/support/sources", src, tn.auth()), 201)
	}
	for _, src := range s.waitIndexed(tn, "support") {
		if src["status"] != "READY" || src["statusReason"] != nil && src["statusReason"] != "" {
			t.Fatalf("source = %v, want READY without a note", src)
		}
	}
	// One call per text chunk; the Q&A pair has its question.
	mock.Expect(t, path, before, 2)

	r := s.do("POST", "/api/v2/agents/support/retrieve", map[string]any{"query": "how fast do you dispatch parcels"}, tn.auth())
	s.mustStatus(r, 200)
	var out struct {
		Results []struct {
			DocumentName string
			Questions    []string
		}
		Trace struct {
			Candidates []struct {
				DocumentName    string
				MatchedQuestion *string
			}
		}
	}
	r.decode(t, &out)
	if len(out.Results) == 0 || out.Results[0].DocumentName != "Orders" {
		t.Fatalf("retrieve found %+v, want the Orders chunk first: %s", out.Results, r.Body)
	}
	if want := []string{"How fast do you dispatch parcels?", "When will my order be sent?"}; !slices.Equal(out.Results[0].Questions, want) {
		t.Fatalf("questions = %q, want %q", out.Results[0].Questions, want)
	}
	if c := out.Trace.Candidates; len(c) == 0 || c[0].MatchedQuestion == nil || *c[0].MatchedQuestion != "How fast do you dispatch parcels?" {
		t.Fatalf("trace candidates = %s, want the first naming the question it was found by", r.Body)
	}
	r = s.do("POST", "/api/v2/agents/support/retrieve", map[string]any{"query": "return an unused item"}, tn.auth())
	s.mustStatus(r, 200)
	out.Results, out.Trace.Candidates = nil, nil
	r.decode(t, &out)
	if c := out.Trace.Candidates; len(c) == 0 || c[0].MatchedQuestion != nil {
		t.Fatalf("trace candidates = %s, want a null matchedQuestion for a chunk without questions", r.Body)
	}
	if len(out.Results) == 0 || out.Results[0].DocumentName != "Returns" || out.Results[0].Questions == nil || len(out.Results[0].Questions) != 0 {
		t.Fatalf("retrieve found %+v, want Returns first with an empty questions list: %s", out.Results, r.Body)
	}
}
