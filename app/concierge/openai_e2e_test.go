package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
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

// groundedModel is an OpenAI-compatible server that streams, as a model
// following the grounded prompt would: a question whether express shipping is free (its passages do not say) gets a call of
// the no_answer tool (when offered), anything else an answer citing the
// passage named "Shipping policy" by its number, and a number that names no
// passage. mock-llm cannot stream a tool call, hence this server.
func groundedModel(t *testing.T) (url string, requests func() int) {
	t.Helper()
	var (
		mu sync.Mutex
		n  int
	)
	passage := regexp.MustCompile(`\[(\d+)\] Shipping policy:`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		offered := false
		for _, tool := range body.Tools {
			offered = offered || tool.Function.Name == "no_answer"
		}
		number := "1"
		for _, m := range body.Messages {
			if found := passage.FindStringSubmatch(m.Content); m.Role == "user" && found != nil {
				number = found[1]
			}
		}
		const head = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"mock-model","choices":[{"index":0,`
		events := []string{head + `"delta":{"role":"assistant","content":null},"finish_reason":null}]}`}
		if question := body.Messages[len(body.Messages)-1].Content; strings.Contains(question, "express shipping free") && offered {
			events = append(events,
				head+`"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"no_answer","arguments":""}}]},"finish_reason":null}]}`,
				head+`"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"missing\":\"express price\"}"}}]},"finish_reason":null}]}`,
				head+`"delta":{},"finish_reason":"tool_calls"}]}`)
		} else {
			for _, piece := range []string{"Standard shipping takes ", "3 to 5 business days [" + number + "]", " (see [9])."} {
				c, _ := json.Marshal(piece)
				events = append(events, head+`"delta":{"content":`+string(c)+`},"finish_reason":null}]}`)
			}
			events = append(events, head+`"delta":{},"finish_reason":"stop"}]}`)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestChatModelDeclinesThroughOpenAI: a model that calls no_answer gets the
// MODEL_DECLINED fallback with a handoff offer, streamed and not, while a
// cited answer keeps its citations of retrieved passages only.
func TestChatModelDeclinesThroughOpenAI(t *testing.T) {
	model, requests := groundedModel(t)
	s := newStack(t, stackOptions{env: map[string]string{
		"CONCIERGE_LLM_PROVIDER": "openai", "CONCIERGE_OPENAI_BASE_URL": model + "/v1",
		"CONCIERGE_OPENAI_API_KEY": "sk-mock", "CONCIERGE_OPENAI_MODEL": "mock-model",
	}})
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)
	// The knowledge has every word of it (retrieval answers), but not the
	// answer: the model declines.
	const question = "Is express shipping free?"

	checkDecline := func(t *testing.T, a answerBody) {
		t.Helper()
		if !a.IsFallback || a.FallbackReason == nil || *a.FallbackReason != "MODEL_DECLINED" || !a.OfferHandoff ||
			a.Message != "Sorry, I can't help with that. Shall I find a person?" || len(a.Citations) != 0 {
			reason := "<nil>"
			if a.FallbackReason != nil {
				reason = *a.FallbackReason
			}
			t.Fatalf("answer = %+v (reason %s), want the MODEL_DECLINED fallback offering handoff, without citations", a, reason)
		}
	}

	t.Run("JSON", func(t *testing.T) {
		before := requests()
		r, a := s.chat(tn, map[string]any{"agent": "support", "message": question})
		s.mustStatus(r, 200)
		checkDecline(t, a)
		if requests() != before+1 {
			t.Fatalf("the model was asked %d times, want once", requests()-before)
		}
		// The stored reply says why, as the API promises.
		r = s.do("GET", "/api/v2/conversations/"+a.SessionID, nil, tn.auth())
		s.mustStatus(r, 200)
		if raw := string(r.Body); !strings.Contains(raw, `"fallbackReason":"MODEL_DECLINED"`) {
			t.Fatalf("stored messages = %s", raw)
		}
	})

	t.Run("stream", func(t *testing.T) {
		resp := s.postStream(tn, map[string]any{"agent": "support", "message": question, "stream": true})
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		events := readSSE(t, strings.NewReader(string(raw)), 0)
		if len(events) < 2 {
			t.Fatalf("stream = %s", raw)
		}
		var text strings.Builder
		for _, ev := range events[:len(events)-1] {
			text.WriteString(ev.Data["content"].(string))
		}
		done, _ := json.Marshal(events[len(events)-1].Data)
		var a answerBody
		if err := json.Unmarshal(done, &a); err != nil || a.Type != "done" || text.String() != a.Message {
			t.Fatalf("stream = %s", raw)
		}
		checkDecline(t, a)
	})

	t.Run("a cited answer still works", func(t *testing.T) {
		r, a := s.chat(tn, map[string]any{"agent": "support", "message": "How long does shipping take?"})
		s.mustStatus(r, 200)
		if a.IsFallback || a.FallbackReason != nil || a.OfferHandoff || !strings.HasPrefix(a.Message, "Standard shipping takes 3 to 5 business days [") {
			t.Fatalf("answer = %+v", a)
		}
		if len(a.Citations) != 1 || a.Citations[0].DocumentName != "Shipping policy" {
			t.Fatalf("citations = %+v, want only the retrieved passage the answer names", a.Citations)
		}
	})
}

// TestChatThroughAServerWithoutTools runs the service against mock-llm
// refusing every request that offers tools (as vLLM without
// --enable-auto-tool-choice does), with CONCIERGE_LLM_TOOLS auto and off:
// answers still come, and a model answering NO_ANSWER gets the
// MODEL_DECLINED fallback with the handoff offer, streamed and not.
func TestChatThroughAServerWithoutTools(t *testing.T) {
	const answerText = "Standard shipping takes 3 to 5 business days [1]."
	body := func(content string) string {
		c, _ := json.Marshal(content)
		return `{"id":"chatcmpl-1","object":"chat.completion","model":"mock-model",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":` + string(c) + `},"finish_reason":"stop"}]}`
	}
	rule := func(match string, status int, content string) mockllmtest.Rule {
		return mockllmtest.Rule{Path: "/v1/chat/completions", Method: "POST", Match: match, Response: mockllmtest.Response{Status: status, Content: content}}
	}
	mock := mockllmtest.Start(t, &mockllmtest.Config{ChunkSize: 8, Rules: []mockllmtest.Rule{
		rule("@", 200, body(answerText)),
		rule("contains(body.messages[-1].content, 'express')", 200, body("NO_ANSWER")),
		rule("body.tools", 400, `{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}`),
	}})
	for _, mode := range []string{"auto", "off"} {
		t.Run(mode, func(t *testing.T) {
			s := newStack(t, stackOptions{env: map[string]string{
				"CONCIERGE_LLM_PROVIDER": "openai", "CONCIERGE_OPENAI_BASE_URL": mock.URL + "/v1",
				"CONCIERGE_OPENAI_API_KEY": "sk-mock", "CONCIERGE_OPENAI_MODEL": "mock-model", "CONCIERGE_LLM_TOOLS": mode,
			}})
			tn := s.newTenant(domain.PlanStandard)
			supportAgent(s, tn)
			stream := func(t *testing.T, question string) (string, answerBody) {
				t.Helper()
				resp := s.postStream(tn, map[string]any{"agent": "support", "message": question, "stream": true})
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				events := readSSE(t, strings.NewReader(string(raw)), 0)
				if len(events) == 0 {
					t.Fatalf("stream = %s", raw)
				}
				var text strings.Builder
				for _, ev := range events[:len(events)-1] {
					text.WriteString(ev.Data["content"].(string))
				}
				done, _ := json.Marshal(events[len(events)-1].Data)
				var a answerBody
				if err := json.Unmarshal(done, &a); err != nil || a.Type != "done" {
					t.Fatalf("stream = %s", raw)
				}
				return text.String(), a
			}
			checkAnswer := func(t *testing.T, a answerBody) {
				t.Helper()
				if a.IsFallback || a.Message != answerText || len(a.Citations) != 1 || a.Citations[0].DocumentName != "Shipping policy" {
					t.Fatalf("answer = %+v", a)
				}
			}
			checkDecline := func(t *testing.T, a answerBody) {
				t.Helper()
				if !a.IsFallback || a.FallbackReason == nil || *a.FallbackReason != "MODEL_DECLINED" || !a.OfferHandoff ||
					strings.Contains(a.Message, "NO_ANSWER") || len(a.Citations) != 0 {
					t.Fatalf("answer = %+v, want the MODEL_DECLINED fallback offering handoff", a)
				}
			}
			t.Run("JSON", func(t *testing.T) {
				r, a := s.chat(tn, map[string]any{"agent": "support", "message": "How long does shipping take?"})
				s.mustStatus(r, 200)
				checkAnswer(t, a)
				r, a = s.chat(tn, map[string]any{"agent": "support", "message": "Is express shipping free?"})
				s.mustStatus(r, 200)
				checkDecline(t, a)
			})
			t.Run("stream", func(t *testing.T) {
				text, a := stream(t, "How long does shipping take?")
				checkAnswer(t, a)
				if text != answerText {
					t.Fatalf("streamed %q", text)
				}
				text, a = stream(t, "Is express shipping free?")
				checkDecline(t, a)
				if text != a.Message || strings.Contains(text, "NO_ANSWER") {
					t.Fatalf("streamed %q, done %q", text, a.Message)
				}
			})
		})
	}
}
