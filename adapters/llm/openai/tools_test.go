package openai

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Servers and models that take no tools (issue 14): Options.Tools, the
// retry without tools when a server refuses them, and the textual decline.

const textDecline = "If the passages do not answer the question, do not guess and do not answer from general knowledge: " +
	"reply with exactly NO_ANSWER and nothing else."

// refusal is an OpenAI-style 400 naming the tools, as vLLM and Ollama send.
func refusal(message, param string) string {
	return `{"error":{"message":"` + message + `","type":"invalid_request_error","param":` + param + `,"code":null}}`
}

func knowledgeTurn(question string, tools ...ports.ToolSpec) ports.CompletionRequest {
	req := userTurn(question)
	req.Knowledge, req.Tools = declineKnowledge, tools
	return req
}

func TestToolsOffOffersNoToolsAndAsksForTheMarker(t *testing.T) {
	lookup := ports.ToolSpec{Name: "lookup_order", Parameters: []byte(`{"type":"object"}`)}
	cases := []struct {
		name  string
		tools string
		want  []string
		text  bool // the preamble asks for the marker
	}{
		{"default is auto", "", []string{"lookup_order", "no_answer"}, false},
		{"auto", ToolsAuto, []string{"lookup_order", "no_answer"}, false},
		{"off", ToolsOff, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, answer("Parcels take 3 days [1]."))
			comp, err := f.model(t, Options{Tools: tc.tools}).Complete(context.Background(), knowledgeTurn("how long is shipping?", lookup), nil)
			if err != nil || comp.Declined || comp.Content != "Parcels take 3 days [1]." {
				t.Fatalf("completion %+v, %v", comp, err)
			}
			body := f.request(0)
			if got := toolNames(body); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("tools %v, want %v", got, tc.want)
			}
			if _, ok := body["tool_choice"]; ok {
				t.Fatalf("tool_choice sent: %v", body["tool_choice"])
			}
			k := content(body["messages"].([]any)[1])
			if strings.Contains(k, textDecline) != tc.text || strings.Contains(k, "call the no_answer tool") == tc.text {
				t.Fatalf("knowledge message (marker wanted: %v):\n%s", tc.text, k)
			}
		})
	}
}

func TestNewRejectsAnUnknownToolsMode(t *testing.T) {
	for _, mode := range []string{"on", "OFF", "none"} {
		if _, err := New(Options{BaseURL: "http://localhost:1/v1", Model: "m", Tools: mode}); err == nil || !strings.Contains(err.Error(), `tools must be "auto" or "off"`) {
			t.Fatalf("Tools %q: err %v", mode, err)
		}
	}
}

func TestRefusedToolsAreDroppedOnceAndRemembered(t *testing.T) {
	cases := []struct {
		name    string
		refuse  func() string // the refused attempt's body
		status  int
		refused bool // tools refused: a second request without them
	}{
		{"400 param tools", func() string { return refusal("tools are not supported", `"tools"`) }, 400, true},
		{"400 tool_choice (vLLM)", func() string {
			return refusal(`\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`, `null`)
		}, 400, true},
		{"400 Ollama's own shape", func() string { return `{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}` }, 400, true},
		{"500 llama.cpp", func() string {
			return `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`
		}, 500, true},
		{"422 names tools", func() string { return `{"detail":[{"loc":["body","tools"],"msg":"extra fields not permitted"}]}` }, 422, true},
		{"400 about something else", func() string { return refusal("messages: too long", `"messages"`) }, 400, false},
		{"401 mentioning tools", func() string { return refusal("no access to tools", `"tools"`) }, 401, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, status(tc.status, nil, tc.refuse()), answer("Parcels take ", "3 days [1]."))
			m := f.model(t, Options{MaxRetries: 0})
			var d deltas
			comp, err := m.Complete(context.Background(), knowledgeTurn("how long is shipping?"), d.on)
			if !tc.refused {
				if err == nil || f.count() != 1 {
					t.Fatalf("completion %+v, err %v, %d requests; want the failure, one request", comp, err, f.count())
				}
				return
			}
			if err != nil || comp.Content != "Parcels take 3 days [1]." || d.joined() != comp.Content || !reflect.DeepEqual(comp.Cited, []string{"chk_shipping"}) {
				t.Fatalf("completion %+v, deltas %q, err %v", comp, d.got, err)
			}
			if f.count() != 2 || len(toolNames(f.request(0))) == 0 || toolNames(f.request(1)) != nil {
				t.Fatalf("%d requests, tools %v then %v; want tools, then none", f.count(), toolNames(f.request(0)), toolNames(f.request(1)))
			}
			if k := content(f.request(1)["messages"].([]any)[1]); !strings.Contains(k, textDecline) {
				t.Fatalf("the retry's knowledge message does not ask for the marker:\n%s", k)
			}
			// The refusal is remembered: the next answer asks without tools
			// at once, until ToolsRefusalMemory has passed.
			if _, err := m.Complete(context.Background(), knowledgeTurn("and returns?"), nil); err != nil || f.count() != 3 || toolNames(f.request(2)) != nil {
				t.Fatalf("next call: err %v, %d requests, tools %v", err, f.count(), toolNames(f.request(2)))
			}
			m.now = func() time.Time { return time.Now().Add(ToolsRefusalMemory + time.Second) }
			if _, err := m.Complete(context.Background(), knowledgeTurn("and returns?"), nil); err != nil || f.count() != 4 || toolNames(f.request(3)) == nil {
				t.Fatalf("after the memory: err %v, %d requests, tools %v", err, f.count(), toolNames(f.request(3)))
			}
		})
	}
}

func TestRefusalWithoutToolsIsNotRetried(t *testing.T) {
	// No knowledge and no agent tools: nothing was offered, so a 400 naming
	// tools is the server's own problem, not ours to work around.
	f := newFake(t, status(400, nil, refusal("tools are not supported", `"tools"`)), answer("ok"))
	_, err := f.model(t, Options{}).Complete(context.Background(), userTurn("hi"), nil)
	if !errors.Is(err, domain.ErrInvalidInput) || f.count() != 1 {
		t.Fatalf("err %v after %d requests; want ErrInvalidInput after one", err, f.count())
	}
}

func TestTextualDecline(t *testing.T) {
	cases := []struct {
		name     string
		pieces   []string
		declined bool
	}{
		{"the marker", []string{"NO_ANSWER"}, true},
		{"in pieces", []string{"NO", "_ANS", "WER"}, true},
		{"blanks, markup, full stop", []string{" `NO_ANSWER`", ".\n"}, true},
		{"lower case", []string{"no_answer"}, true},
		{"with a reason", []string{"NO_ANSWER: the passages ", "do not name Canada."}, true},
		{"an answer", []string{"Parcels take ", "3 days [1]."}, false},
		{"an answer opening like the marker", []string{"NO", " returns after 30 days [2]."}, false},
		{"only the start of the marker", []string{"NO_ANS"}, false},
		{"a longer word", []string{"NO_ANSWERS are ", "rare."}, false},
		{"a note", []string{"Note: parcels take 3 days [1]."}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, answer(tc.pieces...))
			var d deltas
			comp, err := f.model(t, Options{Tools: ToolsOff}).Complete(context.Background(), knowledgeTurn("do you ship to Canada?"), d.on)
			if err != nil {
				t.Fatal(err)
			}
			whole := strings.Join(tc.pieces, "")
			if tc.declined {
				if !comp.Declined || comp.Content != "" || comp.Cited != nil || len(d.got) != 0 {
					t.Fatalf("completion %+v, deltas %q; want a decline that showed nothing", comp, d.got)
				}
				return
			}
			if comp.Declined || comp.Content != whole || d.joined() != whole {
				t.Fatalf("completion %+v, deltas %q; want the answer %q", comp, d.got, whole)
			}
		})
	}
	t.Run("without knowledge the marker is text", func(t *testing.T) {
		f := newFake(t, answer("NO_ANSWER"))
		comp, err := f.model(t, Options{}).Complete(context.Background(), userTurn("hi"), nil)
		if err != nil || comp.Declined || comp.Content != "NO_ANSWER" {
			t.Fatalf("completion %+v, %v", comp, err)
		}
	})
	t.Run("an answer streams on once it is not the marker", func(t *testing.T) {
		f := newFake(t, answer("Parcels", " take", " 3 days [1]."))
		var d deltas
		if _, err := f.model(t, Options{}).Complete(context.Background(), knowledgeTurn("how long?"), d.on); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(d.got, []string{"Parcels", " take", " 3 days [1]."}) {
			t.Fatalf("deltas %q", d.got)
		}
	})
}

// TestMockLLMRefusingTools runs the same against mock-llm, which refuses
// (as an error event in its stream) every request that offers tools, and
// answers the marker for a question its passages do not answer.
func TestMockLLMRefusingTools(t *testing.T) {
	mock := startMockLLM(t)
	ctx := context.Background()
	mock.configure(t,
		rule("@", 200, reply("Parcels take 3 days [1].")),
		rule("contains(body.messages[-1].content, 'Canada')", 200, reply("NO_ANSWER")),
		rule("body.tools", 400, refusal("tools are not supported by this model", `"tools"`)),
	)
	for _, mode := range []string{ToolsAuto, ToolsOff} {
		t.Run(mode, func(t *testing.T) {
			m := mock.model(t, Options{Tools: mode})
			before := mock.completions()
			var d deltas
			comp, err := m.Complete(ctx, knowledgeTurn("how long is shipping?"), d.on)
			if err != nil || comp.Declined || comp.Content != "Parcels take 3 days [1]." || d.joined() != comp.Content ||
				!reflect.DeepEqual(comp.Cited, []string{"chk_shipping"}) {
				t.Fatalf("completion %+v, deltas %q, err %v", comp, d.got, err)
			}
			want := 1
			if mode == ToolsAuto {
				want = 2 // refused, then without tools
			}
			mock.expectCompletions(t, before, want)

			before = mock.completions()
			d = deltas{}
			comp, err = m.Complete(ctx, knowledgeTurn("Do you ship to Canada?"), d.on)
			if err != nil || !comp.Declined || comp.Content != "" || len(d.got) != 0 {
				t.Fatalf("completion %+v, deltas %q, err %v; want a decline", comp, d.got, err)
			}
			// The refusal is remembered: no refused request first.
			mock.expectCompletions(t, before, 1)
		})
	}
}
