package tracing_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/conciergehq/concierge/adapters/tracing"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func TestNewReadsTheOTELVariables(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		on      bool
		wantErr string // a part of the error, "" for none
	}{
		{"nothing set: off", nil, false, ""},
		{"an endpoint: on", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{"a traces endpoint: on", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector/v1/traces"}, true, ""},
		{"disabled SDK", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false, ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"exporter otlp", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"sampling off is still on (spans are not sampled)", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "parentbased_always_off"}, true, ""},
		{"ratio sampler", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, true, ""},
		{"headers and timeout", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b,tenant=x", "OTEL_EXPORTER_OTLP_TIMEOUT": "2000"}, true, ""},
		{"a zipkin exporter", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER"},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"not a URL", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, false, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"unknown sampler", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "sometimes"}, false, "OTEL_TRACES_SAMPLER"},
		{"ratio out of range", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"}, false, "OTEL_TRACES_SAMPLER_ARG"},
		{"bad timeout", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, false, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"bad header", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "no-equals-sign"}, false, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"bad resource attribute", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_RESOURCE_ATTRIBUTES": "=x"}, false, "OTEL_RESOURCE_ATTRIBUTES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := tracing.New(func(k string) string { return tt.env[k] }, "concierge", "test")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tr.Shutdown(context.Background()) }()
			if tr.Enabled() != tt.on {
				t.Fatalf("enabled = %v, want %v", tr.Enabled(), tt.on)
			}
		})
	}
}

// newTraced is tracing into an in-memory exporter, every span sampled.
func newTraced() (*tracing.Tracing, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return tracing.NewWith(sdktrace.NewSimpleSpanProcessor(exp), sdktrace.AlwaysSample(), resource.Empty()), exp
}

type scriptedLLM struct {
	deltas []string
	err    error
}

func (s scriptedLLM) Complete(_ context.Context, _ ports.CompletionRequest, onDelta func(string) error) (ports.Completion, error) {
	for _, d := range s.deltas {
		if err := onDelta(d); err != nil {
			return ports.Completion{}, err
		}
	}
	return ports.Completion{Content: strings.Join(s.deltas, ""), Model: "m1", Usage: domain.Usage{PromptTokens: 7, CompletionTokens: 2}}, s.err
}

func TestModelSpans(t *testing.T) {
	stop := errors.New("the engine stopped the answer")
	tests := []struct {
		name      string
		llm       scriptedLLM
		onDelta   func(string) error
		wantError bool
	}{
		{"answered", scriptedLLM{deltas: []string{"a", "b"}}, func(string) error { return nil }, false},
		{"the provider failed", scriptedLLM{err: domain.Unavailable("model", errors.New("down"))}, func(string) error { return nil }, true},
		{"the caller stopped it: not the model's error", scriptedLLM{deltas: []string{"a"}}, func(string) error { return stop }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, exp := newTraced()
			_, _ = tr.LLM("openai", "m1", tt.llm).Complete(context.Background(), ports.CompletionRequest{}, tt.onDelta)
			spans := exp.GetSpans()
			if len(spans) != 1 || spans[0].Name != "chat m1" {
				t.Fatalf("spans = %v", spans)
			}
			if failed := spans[0].Status.Code.String() == "Error"; failed != tt.wantError {
				t.Fatalf("span status %v, want error %v", spans[0].Status, tt.wantError)
			}
			got := map[string]string{}
			for _, kv := range spans[0].Attributes {
				got[string(kv.Key)] = kv.Value.Emit()
			}
			if got["gen_ai.provider.name"] != "openai" || got["gen_ai.request.model"] != "m1" {
				t.Fatalf("attributes = %v", got)
			}
			if !tt.wantError && tt.name == "answered" && (got["gen_ai.usage.input_tokens"] != "7" || got["gen_ai.usage.output_tokens"] != "2") {
				t.Fatalf("tokens = %v", got)
			}
		})
	}
}

func TestStepsNestUnderTheirParent(t *testing.T) {
	tr, exp := newTraced()
	ctx, endOuter := tr.Step(context.Background(), "outer")
	_, endInner := tr.Step(ctx, "inner")
	endInner(errors.New("refused"))
	endOuter(nil)
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "inner" || spans[1].Name != "outer" {
		t.Fatalf("spans = %v", spans)
	}
	if spans[0].Parent.SpanID() != spans[1].SpanContext.SpanID() || spans[0].Status.Code.String() != "Error" || spans[1].Status.Code.String() == "Error" {
		t.Fatalf("inner %+v outer %+v", spans[0], spans[1])
	}
}

func TestLogLinesCarryTheirTrace(t *testing.T) {
	tr, _ := newTraced()
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewTextHandler(&buf, nil))).With("component", "test")
	ctx, end := tr.Step(context.Background(), "request")
	log.InfoContext(ctx, "inside")
	end(nil)
	log.InfoContext(context.Background(), "outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines: %q", lines)
	}
	if !strings.Contains(lines[0], "trace_id=") || !strings.Contains(lines[0], "span_id=") || !strings.Contains(lines[0], "component=test") {
		t.Errorf("a line inside a span: %s", lines[0])
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Errorf("a line outside any span: %s", lines[1])
	}
}
