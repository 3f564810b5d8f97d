package main

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/workers"
)

// otlpReceiver is a test OTLP/HTTP trace receiver: it decodes each export
// with the official OTLP protobuf types, as a collector would, and keeps
// the spans with the service.name of the process that sent them.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []receivedSpan
	failures []string
}

type receivedSpan struct {
	service string
	span    *tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(why string) {
		o.mu.Lock()
		o.failures = append(o.failures, why)
		o.mu.Unlock()
		http.Error(w, why, http.StatusBadRequest)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		fail(r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type"))
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			fail("gzip: " + err.Error())
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		fail(err.Error())
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		fail("decoding ExportTraceServiceRequest: " + err.Error())
		return
	}
	o.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				o.spans = append(o.spans, receivedSpan{service: service, span: sp})
			}
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (o *otlpReceiver) snapshot() ([]receivedSpan, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]receivedSpan(nil), o.spans...), append([]string(nil), o.failures...)
}

// TestTracesReachAnOTLPCollector (issue 19): real `concierge serve` and
// `worker` processes configured only by OTEL_EXPORTER_OTLP_ENDPOINT send
// their spans through the SDK's OTLP/HTTP exporter to a receiver that
// decodes them with the official protobuf types: a chat request's trace
// continues the caller's traceparent and holds the guardrails, retrieval,
// model and PostgreSQL spans under the request's span; an index job's span,
// sent by the worker process, continues the trace of the API request that
// created its source.
func TestTracesReachAnOTLPCollector(t *testing.T) {
	rec := &otlpReceiver{}
	collector := httptest.NewServer(rec)
	defer collector.Close()
	c := newCluster(t, clusterOptions{pods: 1, workers: 1, env: map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
		// Export every 200 ms instead of every 5 s.
		"OTEL_BSP_SCHEDULE_DELAY": "200",
	}})
	pod := c.pods[0]
	tn := c.newTenant(domain.PlanStandard)
	c.supportAgent(pod, tn)
	h := tn.auth()
	h["traceparent"] = "00-" + callerTraceID + "-" + callerSpan1 + "-01"
	c.must(c.do(pod, "POST", "/api/v2/chat", map[string]any{"agent": "support", "message": "How long does standard shipping take?"}, h), 200)

	want := []string{"POST /api/v2/chat", "chat.guardrails", "retrieval", "chat local", "postgres SELECT"}
	var spans []receivedSpan
	var failures []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans, failures = rec.snapshot()
		if len(failures) > 0 {
			t.Fatalf("the receiver refused exports: %v", failures)
		}
		if indexContinuesItsRequest(spans) && hasAll(spans, callerTraceID, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var chat *tracepb.Span
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		if hex.EncodeToString(s.span.GetTraceId()) != callerTraceID {
			continue
		}
		if s.service != "concierge" {
			t.Errorf("span %q comes from service %q, want concierge", s.span.GetName(), s.service)
		}
		byID[hex.EncodeToString(s.span.GetSpanId())] = s.span
		if s.span.GetName() == "POST /api/v2/chat" {
			chat = s.span
		}
	}
	if chat == nil {
		t.Fatalf("no span of the chat request in the caller's trace (%d spans received)", len(spans))
	}
	if hex.EncodeToString(chat.GetParentSpanId()) != callerSpan1 || chat.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("the chat span's parent is %x and kind %v; want the caller's %s, server", chat.GetParentSpanId(), chat.GetKind(), callerSpan1)
	}
	chatID := hex.EncodeToString(chat.GetSpanId())
	for _, name := range want[1:] {
		found := false
		for _, sp := range byID {
			if sp.GetName() != name {
				continue
			}
			// Walk up to the request's span.
			for p := sp; p != nil; p = byID[hex.EncodeToString(p.GetParentSpanId())] {
				if hex.EncodeToString(p.GetParentSpanId()) == chatID {
					found = true
					break
				}
			}
		}
		if !found {
			t.Errorf("no %q span under the chat request's span", name)
		}
	}
	if !indexContinuesItsRequest(spans) {
		t.Errorf("no %s span from the worker continues the trace of the request that created its source", workers.TypeKnowledgeIndex)
	}
}

// hasAll reports whether the trace holds a span of every name.
func hasAll(spans []receivedSpan, traceID string, names []string) bool {
	seen := map[string]bool{}
	for _, s := range spans {
		if hex.EncodeToString(s.span.GetTraceId()) == traceID {
			seen[s.span.GetName()] = true
		}
	}
	for _, n := range names {
		if !seen[n] {
			return false
		}
	}
	return true
}

// indexContinuesItsRequest reports whether a knowledge:index span (the
// worker's) shares its trace with a request that created a source (the
// API pod's), as its child.
func indexContinuesItsRequest(spans []receivedSpan) bool {
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.span.GetSpanId())] = s.span
	}
	for _, s := range spans {
		if s.span.GetName() != workers.TypeKnowledgeIndex {
			continue
		}
		for p := byID[hex.EncodeToString(s.span.GetParentSpanId())]; p != nil; p = byID[hex.EncodeToString(p.GetParentSpanId())] {
			if p.GetName() == "POST /api/v2/agents/:slug/sources" {
				return true
			}
		}
	}
	return false
}
