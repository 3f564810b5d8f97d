package openai

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var declineKnowledge = []domain.Chunk{
	{ID: "chk_shipping", DocumentName: "Shipping", Text: "Parcels take 3 days."},
	{ID: "chk_returns", DocumentName: "Returns", Text: "Returns are free within 30 days."},
}

func toolNames(body map[string]any) []string {
	var names []string
	tools, _ := body["tools"].([]any)
	for _, tool := range tools {
		fn, _ := tool.(map[string]any)["function"].(map[string]any)
		name, _ := fn["name"].(string)
		names = append(names, name)
	}
	return names
}

func TestDeclineToolIsOfferedWithKnowledgeOnly(t *testing.T) {
	lookup := ports.ToolSpec{Name: "lookup_order", Parameters: []byte(`{"type":"object"}`)}
	cases := []struct {
		name      string
		knowledge []domain.Chunk
		tools     []ports.ToolSpec
		want      []string
	}{
		{"no knowledge, no tools", nil, nil, nil},
		{"no knowledge, agent tools", nil, []ports.ToolSpec{lookup}, []string{"lookup_order"}},
		{"knowledge, no agent tools", declineKnowledge, nil, []string{"no_answer"}},
		{"knowledge and agent tools", declineKnowledge, []ports.ToolSpec{lookup}, []string{"lookup_order", "no_answer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, answer("ok"))
			req := userTurn("how long is shipping?")
			req.Knowledge, req.Tools = tc.knowledge, tc.tools
			if _, err := f.model(t, Options{}).Complete(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			body := f.request(0)
			if got := toolNames(body); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("tools %v, want %v", got, tc.want)
			}
			if tc.knowledge == nil {
				return
			}
			tools := body["tools"].([]any)
			decline := tools[len(tools)-1].(map[string]any)
			fn := decline["function"].(map[string]any)
			params, _ := fn["parameters"].(map[string]any)
			props, _ := params["properties"].(map[string]any)
			if decline["type"] != "function" || fn["description"] == "" || params["type"] != "object" || props["missing"] == nil || params["required"] != nil {
				t.Fatalf("no_answer tool %v", decline)
			}
			k := content(body["messages"].([]any)[1])
			for _, want := range []string{
				"Answer only from these passages.",
				"cite its number in square brackets, like [1]",
				"If the passages do not answer the question, do not guess and do not answer from general knowledge: call the no_answer tool",
				"[1] Shipping:\n```\nParcels take 3 days.\n```",
			} {
				if !strings.Contains(k, want) {
					t.Fatalf("knowledge message lacks %q:\n%s", want, k)
				}
			}
		})
	}
}

// toolChunk is one streamed delta of tool calls.
func toolChunk(calls string) string {
	return chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[` + calls + `]},"finish_reason":null}]}`
}

const roleChunk = chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`

func TestNoAnswerCallBecomesDeclined(t *testing.T) {
	lookup := `{"index":0,"id":"call_L","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\":\"A-1\"}"}}`
	cases := []struct {
		name      string
		events    []string
		knowledge []domain.Chunk
		declined  bool
		content   string
		calls     []domain.ToolCall
		cited     []string
	}{
		{
			name: "alone, in one chunk",
			events: []string{roleChunk,
				toolChunk(`{"index":0,"id":"call_N","type":"function","function":{"name":"no_answer","arguments":"{\"missing\":\"delivery to Canada\"}"}}`),
				finishChunk("tool_calls"), usageChunk(50, 9)},
			knowledge: declineKnowledge, declined: true,
		},
		{
			name: "alone, arguments streamed in pieces",
			events: []string{roleChunk,
				toolChunk(`{"index":0,"id":"call_N","type":"function","function":{"name":"no_answer","arguments":""}}`),
				toolChunk(`{"index":0,"function":{"arguments":"{\"miss"}}`),
				toolChunk(`{"index":0,"function":{"arguments":"ing\": \"Canada\"}"}}`),
				finishChunk("tool_calls"), usageChunk(50, 9)},
			knowledge: declineKnowledge, declined: true,
		},
		{
			name: "without arguments",
			events: []string{roleChunk,
				toolChunk(`{"index":0,"id":"call_N","type":"function","function":{"name":"no_answer"}}`),
				finishChunk("tool_calls")},
			knowledge: declineKnowledge, declined: true,
		},
		{
			// The text is already with the caller: it is reported as it
			// is, with its citations, and the caller decides.
			name: "after content",
			events: []string{roleChunk, contentChunk("Parcels take "), contentChunk("3 days [1]."),
				toolChunk(`{"index":0,"id":"call_N","type":"function","function":{"name":"no_answer","arguments":"{}"}}`),
				finishChunk("tool_calls")},
			knowledge: declineKnowledge, declined: true, content: "Parcels take 3 days [1].", cited: []string{"chk_shipping"},
		},
		{
			name: "with a real tool call, which is not run",
			events: []string{roleChunk, toolChunk(lookup),
				toolChunk(`{"index":1,"id":"call_N","type":"function","function":{"name":"no_answer","arguments":"{}"}}`),
				finishChunk("tool_calls")},
			knowledge: declineKnowledge, declined: true,
		},
		{
			name: "before a real tool call, in one chunk",
			events: []string{roleChunk,
				toolChunk(`{"index":0,"id":"call_N","type":"function","function":{"name":"no_answer","arguments":"{}"}},` +
					strings.Replace(lookup, `"index":0`, `"index":1`, 1)),
				finishChunk("tool_calls")},
			knowledge: declineKnowledge, declined: true,
		},
		{
			name:      "a real tool call alone stays a tool call",
			events:    []string{roleChunk, toolChunk(lookup), finishChunk("tool_calls")},
			knowledge: declineKnowledge,
			calls:     []domain.ToolCall{{ID: "call_L", Name: "lookup_order", Arguments: `{"order_id":"A-1"}`}},
		},
		{
			// Not offered without passages: a call of that name is the
			// model's mistake, left for the engine to refuse like any
			// unknown tool.
			name: "without knowledge it is not a decline",
			events: []string{roleChunk,
				toolChunk(`{"index":0,"id":"call_N","type":"function","function":{"name":"no_answer","arguments":"{}"}}`),
				finishChunk("tool_calls")},
			calls: []domain.ToolCall{{ID: "call_N", Name: "no_answer", Arguments: "{}"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(tc.events, true))
			req := userTurn("do you ship to Canada?")
			req.Knowledge = tc.knowledge
			req.Tools = []ports.ToolSpec{{Name: "lookup_order", Parameters: []byte(`{"type":"object"}`)}}
			var d deltas
			comp, err := f.model(t, Options{}).Complete(context.Background(), req, d.on)
			if err != nil {
				t.Fatal(err)
			}
			if comp.Declined != tc.declined {
				t.Fatalf("declined = %v, want %v", comp.Declined, tc.declined)
			}
			if comp.Content != tc.content || d.joined() != tc.content {
				t.Fatalf("content %q deltas %q, want %q", comp.Content, d.got, tc.content)
			}
			if !reflect.DeepEqual(comp.ToolCalls, tc.calls) {
				t.Fatalf("tool calls %+v, want %+v", comp.ToolCalls, tc.calls)
			}
			if !reflect.DeepEqual(comp.Cited, tc.cited) {
				t.Fatalf("cited %v, want %v", comp.Cited, tc.cited)
			}
			if f.count() != 1 {
				t.Fatalf("%d requests", f.count())
			}
		})
	}
}
