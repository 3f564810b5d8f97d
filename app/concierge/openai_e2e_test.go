package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/adapters/openaicompat/mockllmtest"
	"github.com/conciergehq/concierge/core/domain"
)

// startMockLLM runs the pinned @dwmkerr/mock-llm (installed by `make test`)
// on loopback, answering every chat completion with reply, and returns its URL.
func startMockLLM(t *testing.T, reply string) string {
	t.Helper()
	content, _ := json.Marshal(reply)
	return mockllmtest.Start(t, &mockllmtest.Config{ChunkSize: 8, Rules: []mockllmtest.Rule{{
		Path: "/v1/chat/completions", Method: "POST", Match: "@",
		Response: mockllmtest.Response{Status: 200, Content: `{"id":"chatcmpl-1","object":"chat.completion","model":"mock-model",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":` + string(content) + `},"finish_reason":"stop"}]}`},
	}}}).URL
}

// TestChatThroughAnOpenAICompatibleServer runs the whole service with the
// openai provider against a real OpenAI-compatible server process.
func TestChatThroughAnOpenAICompatibleServer(t *testing.T) {
	const reply = "Standard shipping takes 3 to 5 business days [1]."
	mock := startMockLLM(t, reply)
	s := newStack(t, stackOptions{env: map[string]string{
		"CONCIERGE_LLM_PROVIDER": "openai", "CONCIERGE_OPENAI_BASE_URL": mock + "/v1",
		"CONCIERGE_OPENAI_API_KEY": "sk-mock", "CONCIERGE_OPENAI_MODEL": "mock-model",
	}})
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)

	r, a := s.chat(tn, map[string]any{"agent": "support", "message": "How long does shipping take?"})
	s.mustStatus(r, 200)
	if a.Message != reply || a.IsFallback || len(a.Citations) != 1 || a.Citations[0].DocumentName != "Shipping policy" {
		t.Fatalf("answer = %+v", a)
	}

	resp := s.postStream(tn, map[string]any{"agent": "support", "message": "How long does shipping take?", "stream": true})
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	events := readSSE(t, strings.NewReader(string(raw)), 0)
	var text strings.Builder
	for _, ev := range events[:len(events)-1] {
		text.WriteString(ev.Data["content"].(string))
	}
	done := events[len(events)-1].Data
	if len(events) < 3 || done["type"] != "done" || done["message"] != reply || text.String() != reply {
		t.Fatalf("stream = %s", raw)
	}

	// Nothing relevant retrieved: the engine answers with the fallback and
	// never asks the model.
	r, off := s.chat(tn, map[string]any{"agent": "support", "message": "Who won the football match?"})
	s.mustStatus(r, 200)
	if !off.IsFallback || off.Message == reply {
		t.Fatalf("off-topic answer = %+v", off)
	}
}
