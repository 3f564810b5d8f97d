package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/conciergehq/concierge/adapters/tracing"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/workers"
)

// The caller's trace in these tests: a W3C traceparent an API client (or
// its gateway) sends.
const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan1   = "00f067aa0ba902b7"
	callerSpan2   = "00f067aa0ba902b8"
)

// hookReceiver is a receiver of handoff deliveries that keeps the headers
// of each.
func hookReceiver(t *testing.T) (*httptest.Server, chan http.Header) {
	t.Helper()
	got := make(chan http.Header, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// TestTraceFollowsARequest (issue 19): with tracing on, one trace runs
// from a caller's request through the HTTP span, the guardrails, retrieval,
// the model and the store; a handoff's delivery task continues it in the
// worker and sends it on to the receiver as traceparent; the log lines of
// those requests carry its trace_id. The spans are read from the SDK's
// in-memory exporter.
func TestTraceFollowsARequest(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	traces := tracing.NewWith(sdktrace.NewSimpleSpanProcessor(exporter), sdktrace.ParentBased(sdktrace.AlwaysSample()), resource.Empty())
	logs := &syncBuffer{}
	s := newStack(t, stackOptions{withWorker: true, traces: traces, logSink: logs,
		env: map[string]string{"CONCIERGE_DELIVERY_ALLOW_PRIVATE_ADDRESSES_FOR_TESTS": "true"}})
	receiver, hooks := hookReceiver(t)
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)
	r, _ := s.integrations(tn, "PATCH", map[string]any{"helpdeskUrl": receiver.URL + "/hooks/concierge"})
	s.mustStatus(r, 200)

	h := tn.auth()
	h["traceparent"] = "00-" + callerTraceID + "-" + callerSpan1 + "-01"
	r = s.do("POST", "/api/v2/chat", map[string]any{"agent": "support", "message": "How long does standard shipping take?"}, h)
	s.mustStatus(r, 200)
	var answer answerBody
	r.decode(t, &answer)
	handoff := s.do("POST", "/api/chat/"+answer.SessionID+"/handoff", map[string]any{"name": "Vera Visitor"},
		header{"traceparent": "00-" + callerTraceID + "-" + callerSpan2 + "-01"})
	if handoff.Status/100 != 2 {
		t.Fatalf("handoff: %d %s", handoff.Status, handoff.Body)
	}

	// The delivery reaches the receiver with the trace.
	select {
	case got := <-hooks:
		tp := got.Get("traceparent")
		if !strings.HasPrefix(tp, "00-"+callerTraceID+"-") || strings.HasSuffix(tp, callerSpan2+"-01") {
			t.Fatalf("the delivery's traceparent = %q, want the caller's trace %s with the worker's span", tp, callerTraceID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery reached the receiver in 30 s")
	}

	// The worker's span of the delivery task ends after the POST: wait for it.
	var spans tracetest.SpanStubs
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans = exporter.GetSpans()
		if find(spans, workers.TypeHandoffDeliver, callerTraceID) != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID()] = sp
	}
	// under reports whether sp descends from the span named root.
	under := func(sp tracetest.SpanStub, root tracetest.SpanStub) bool {
		for {
			if sp.Parent.SpanID() == root.SpanContext.SpanID() {
				return true
			}
			p, ok := byID[sp.Parent.SpanID()]
			if !ok {
				return false
			}
			sp = p
		}
	}

	chat := find(spans, "POST /api/v2/chat", callerTraceID)
	if chat == nil {
		t.Fatalf("no server span of the chat request in the caller's trace; spans: %s", names(spans))
	}
	if chat.Parent.SpanID().String() != callerSpan1 || !chat.Parent.IsRemote() || chat.SpanKind != trace.SpanKindServer {
		t.Errorf("the chat span's parent is %s (remote %v), kind %v; want the caller's %s", chat.Parent.SpanID(), chat.Parent.IsRemote(), chat.SpanKind, callerSpan1)
	}
	for _, name := range []string{"chat.guardrails", "retrieval", "chat local", "postgres WITH", "postgres SELECT"} {
		sp := findUnder(spans, name, *chat, under)
		if sp == nil {
			t.Errorf("no %q span under the chat request; spans: %s", name, names(spans))
		}
	}
	if sp := findUnder(spans, "retrieval", *chat, under); sp != nil && attr(sp, "retrieval.chunks") == "" {
		t.Errorf("the retrieval span counts no chunks: %v", sp.Attributes)
	}
	if sp := findUnder(spans, "chat local", *chat, under); sp != nil && (attr(sp, "gen_ai.provider.name") != "local" || attr(sp, "gen_ai.usage.output_tokens") == "") {
		t.Errorf("the model span lacks its provider or tokens: %v", sp.Attributes)
	}
	if attr(chat, "http.route") != "/api/v2/chat" || attr(chat, "http.response.status_code") != "200" {
		t.Errorf("the chat span's attributes: %v", chat.Attributes)
	}

	ho := find(spans, "POST /api/chat/:sessionId/handoff", callerTraceID)
	if ho == nil {
		t.Fatalf("no server span of the handoff request (by its route template); spans: %s", names(spans))
	}
	task := find(spans, workers.TypeHandoffDeliver, callerTraceID)
	if task == nil || !under(*task, *ho) || task.SpanKind != trace.SpanKindConsumer {
		t.Fatalf("the delivery task's span does not continue the handoff request: %+v; spans: %s", task, names(spans))
	}

	// The access log lines of both requests carry the trace.
	s.shutdown()
	lines := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "msg=request") && strings.Contains(line, "trace_id="+callerTraceID) && strings.Contains(line, "span_id=") {
			lines++
		}
	}
	if lines < 2 {
		t.Errorf("%d access log lines carry trace_id=%s, want the chat's and the handoff's:\n%s", lines, callerTraceID, logs.String())
	}
}

// TestTracingOffByDefault: without OTEL_* nothing is traced: a caller's
// traceparent is not continued, the delivery carries none, and log lines
// have no trace_id.
func TestTracingOffByDefault(t *testing.T) {
	base := slog.New(slog.DiscardHandler)
	traces, log, err := (&env{getenv: func(string) string { return "" }}).tracing(base)
	if err != nil || traces != nil || log != base {
		t.Fatalf("tracing with no OTEL_* variables = %v, %v, %v; want off", traces, log, err)
	}
	logs := &syncBuffer{}
	s := newStack(t, stackOptions{withWorker: true, logSink: logs,
		env: map[string]string{"CONCIERGE_DELIVERY_ALLOW_PRIVATE_ADDRESSES_FOR_TESTS": "true"}})
	receiver, hooks := hookReceiver(t)
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	r, _ := s.integrations(tn, "PATCH", map[string]any{"helpdeskUrl": receiver.URL + "/hooks/concierge"})
	s.mustStatus(r, 200)
	session := s.startSession(tn, "support")
	handoff := s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"name": "Vera Visitor"},
		header{"traceparent": "00-" + callerTraceID + "-" + callerSpan2 + "-01"})
	if handoff.Status/100 != 2 {
		t.Fatalf("handoff: %d %s", handoff.Status, handoff.Body)
	}
	select {
	case got := <-hooks:
		if tp := got.Get("traceparent"); tp != "" {
			t.Fatalf("with tracing off the delivery carries traceparent %q", tp)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery reached the receiver in 30 s")
	}
	s.shutdown()
	if strings.Contains(logs.String(), "trace_id=") {
		t.Errorf("with tracing off a log line carries a trace_id:\n%s", logs.String())
	}
}

// find returns the span named name in the trace, or nil.
func find(spans tracetest.SpanStubs, name, traceID string) *tracetest.SpanStub {
	for i := range spans {
		if spans[i].Name == name && spans[i].SpanContext.TraceID().String() == traceID {
			return &spans[i]
		}
	}
	return nil
}

// findUnder returns a span named name below root, or nil.
func findUnder(spans tracetest.SpanStubs, name string, root tracetest.SpanStub, under func(tracetest.SpanStub, tracetest.SpanStub) bool) *tracetest.SpanStub {
	for i := range spans {
		if spans[i].Name == name && under(spans[i], root) {
			return &spans[i]
		}
	}
	return nil
}

// names lists the spans of the caller's trace, for failure messages.
func names(spans tracetest.SpanStubs) string {
	var out []string
	for _, sp := range spans {
		if sp.SpanContext.TraceID().String() == callerTraceID {
			out = append(out, sp.Name)
		}
	}
	return strings.Join(out, ", ")
}

// attr is a span attribute's value as text ("" when absent).
func attr(sp *tracetest.SpanStub, key string) string {
	for _, kv := range sp.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
