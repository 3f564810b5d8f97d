package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/conciergehq/concierge/adapters/metrics"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// fakeLLM says its deltas, then returns what it was told.
type fakeLLM struct {
	deltas []string
	comp   ports.Completion
	err    error
}

func (f fakeLLM) Complete(_ context.Context, _ ports.CompletionRequest, onDelta func(string) error) (ports.Completion, error) {
	for _, d := range f.deltas {
		if err := onDelta(d); err != nil {
			return f.comp, err
		}
	}
	return f.comp, f.err
}

func TestLLMOutcomesAndModelLabels(t *testing.T) {
	stop := errors.New("stopped by the output filter")
	tests := []struct {
		name    string
		llm     fakeLLM
		model   string // CompletionRequest.Model
		onDelta func(string) error
		want    string // the one series that must have moved
	}{
		{"ok", fakeLLM{deltas: []string{"a"}, comp: ports.Completion{Usage: domain.Usage{PromptTokens: 10, CompletionTokens: 3}}}, "", nil,
			`concierge_llm_requests_total{model="gpt-4o-mini",outcome="ok",provider="openai"} 1`},
		{"error", fakeLLM{err: errors.New("boom")}, "", nil,
			`concierge_llm_requests_total{model="gpt-4o-mini",outcome="error",provider="openai"} 1`},
		{"declined", fakeLLM{comp: ports.Completion{Declined: true}}, "", nil,
			`concierge_llm_requests_total{model="gpt-4o-mini",outcome="declined",provider="openai"} 1`},
		{"stopped by the caller is ok", fakeLLM{deltas: []string{"a", "b"}}, "", func(d string) error {
			if d == "b" {
				return stop
			}
			return nil
		}, `concierge_llm_requests_total{model="gpt-4o-mini",outcome="ok",provider="openai"} 1`},
		{"a known model keeps its name", fakeLLM{}, "gpt-4o", nil,
			`concierge_llm_requests_total{model="gpt-4o",outcome="ok",provider="openai"} 1`},
		{"an agent's own model is other", fakeLLM{}, "my-finetune-for-acme", nil,
			`concierge_llm_requests_total{model="other",outcome="ok",provider="openai"} 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New()
			llm := m.LLM("openai", "gpt-4o-mini", []string{"gpt-4o"}, tt.llm)
			onDelta := tt.onDelta
			if onDelta == nil {
				onDelta = func(string) error { return nil }
			}
			_, _ = llm.Complete(context.Background(), ports.CompletionRequest{Model: tt.model}, onDelta)
			want := "# HELP concierge_llm_requests_total Language model calls, by provider, model and outcome (ok, error, declined).\n" +
				"# TYPE concierge_llm_requests_total counter\n" + tt.want + "\n"
			if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "concierge_llm_requests_total"); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("tokens by kind", func(t *testing.T) {
		m := metrics.New()
		llm := m.LLM("local", "local", nil, fakeLLM{comp: ports.Completion{Usage: domain.Usage{PromptTokens: 10, CompletionTokens: 3}}})
		_, _ = llm.Complete(context.Background(), ports.CompletionRequest{}, func(string) error { return nil })
		want := `# HELP concierge_llm_tokens_total Tokens the language models reported, by kind (prompt, completion).
# TYPE concierge_llm_tokens_total counter
concierge_llm_tokens_total{kind="completion",model="local",provider="local"} 3
concierge_llm_tokens_total{kind="prompt",model="local",provider="local"} 10
`
		if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "concierge_llm_tokens_total"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRequestLabelsAreBounded(t *testing.T) {
	m := metrics.New()
	m.ObserveRequest("/api/v2/chat", "BREW", 200, 0)
	m.ObserveRequest("/api/v2/chat", "POST", 999, 0)
	want := `# HELP concierge_http_requests_total HTTP requests answered, by route template, method and status code.
# TYPE concierge_http_requests_total counter
concierge_http_requests_total{code="200",method="OTHER",route="/api/v2/chat"} 1
concierge_http_requests_total{code="other",method="POST",route="/api/v2/chat"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "concierge_http_requests_total"); err != nil {
		t.Fatal(err)
	}
}
