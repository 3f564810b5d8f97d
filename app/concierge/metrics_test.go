package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/conciergehq/concierge/core/domain"
)

// scrape reads the process's metrics listener as Prometheus does, with the
// client library's own parser.
func scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return families
}

// value is the sum of the family's series whose labels include want
// (a counter's or gauge's value, a histogram's count).
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
	var sum float64
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func labelNames(f *dto.MetricFamily) []string {
	seen := map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			seen[l.GetName()] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestMetricsScrape runs a process with metrics on its own listener, and
// checks that a chat (JSON and streamed), a fallback, a 404, a live stream,
// a handoff, an inbound event and its delivery moved the families of the
// contract (docs/operations.md), with their label sets, and that no label
// holds an id or a request path.
func TestMetricsScrape(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: true, env: map[string]string{"CONCIERGE_METRICS_ADDR": "127.0.0.1:0"}})
	addr, stop, err := s.sys.serveMetrics(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)

	before := scrape(t, addr)
	if v := value(before, "concierge_handoffs_total", nil); v != 0 {
		t.Fatalf("handoffs before any: %v", v)
	}

	// A chat answered from knowledge, one streamed, a fallback.
	r, _ := s.chat(tn, map[string]any{"agent": "support", "message": "How long does shipping take?"})
	s.mustStatus(r, 200)
	s.readStream(s.postStream(tn, map[string]any{"agent": "support", "message": "How do I return an item?", "stream": true}))
	r, fb := s.chat(tn, map[string]any{"agent": "support", "message": "What is the capital of France?"})
	s.mustStatus(r, 200)
	if !fb.IsFallback {
		t.Fatalf("want a fallback: %+v", fb)
	}
	// Two unknown paths: one series between them.
	for _, p := range []string{"/no/such/page", "/api/v2/nothing/" + domain.NewID("x_")} {
		if got := s.raw("GET", p, nil, tn.auth()); got.Status != 404 {
			t.Fatalf("GET %s: %d", p, got.Status)
		}
	}
	// A conversation that does not exist: the route's template, not its id.
	s.mustStatus(s.do("GET", "/api/v2/conversations/"+domain.NewID(domain.PrefixSession), nil, tn.auth()), 404)

	// A live stream, open while the visitor asks again.
	session := s.startSession(tn, "support")
	ctx, cancelLive := context.WithCancel(context.Background())
	defer cancelLive()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.base+"/api/chat/"+session+"/events", nil)
	live, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Body.Close()
	whEventually(t, 10*time.Second, "the live stream to be counted", func() bool {
		return value(scrape(t, addr), "concierge_streams_open", nil) >= 1
	})
	s.sendMessage(session, "How long does express shipping take?")
	whEventually(t, 10*time.Second, "relay lag observed", func() bool {
		return value(scrape(t, addr), "concierge_relay_lag_seconds", nil) >= 1
	})

	// A handoff by the visitor, and its delivery by the worker.
	s.mustStatus(s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"name": "Ada", "email": "ada@example.com"}, nil), 200)
	// An inbound webhook event, accepted here, processed by the worker.
	other := s.startSession(tn, "support")
	whMustAck(s, whPost(s, tn.WebhookSecret, whChat(other, "Hello from the helpdesk"), nil), tn.ID)

	var after map[string]*dto.MetricFamily
	whEventually(t, 15*time.Second, "the worker's inbound processing and the delivery", func() bool {
		after = scrape(t, addr)
		return value(after, "concierge_inbound_events_total", map[string]string{"stage": "processed"}) >= 1 &&
			value(after, "concierge_deliveries_total", nil) >= 1
	})
	cancelLive()

	moved := []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"concierge_http_requests_total", map[string]string{"route": "/api/v2/chat", "method": "POST", "code": "200"}, 3},
		{"concierge_http_requests_total", map[string]string{"route": "unmatched", "method": "GET", "code": "404"}, 2},
		{"concierge_http_requests_total", map[string]string{"route": "/api/v2/conversations/:id", "method": "GET", "code": "404"}, 1},
		{"concierge_http_requests_total", map[string]string{"route": "/api/chat/:sessionId/events", "method": "GET", "code": "200"}, 1},
		{"concierge_http_request_duration_seconds", map[string]string{"route": "/api/v2/chat", "method": "POST"}, 3},
		{"concierge_chat_time_to_first_token_seconds", map[string]string{"stream": "true"}, 1},
		{"concierge_chat_time_to_first_token_seconds", map[string]string{"stream": "false"}, 2},
		{"concierge_chat_duration_seconds", map[string]string{"stream": "false"}, 2},
		{"concierge_fallbacks_total", map[string]string{"reason": "NO_RELEVANT_KNOWLEDGE"}, 1},
		{"concierge_handoffs_total", nil, 1},
		{"concierge_llm_requests_total", map[string]string{"provider": "local", "model": "local", "outcome": "ok"}, 3},
		{"concierge_llm_request_duration_seconds", map[string]string{"provider": "local", "model": "local"}, 3},
		{"concierge_retrieval_duration_seconds", nil, 4},
		{"concierge_retrieval_candidates", nil, 4},
		{"concierge_inbound_events_total", map[string]string{"stage": "accepted"}, 1},
		{"concierge_inbound_events_total", map[string]string{"stage": "processed"}, 1},
		{"concierge_deliveries_total", nil, 1},
		{"concierge_relay_lag_seconds", nil, 1},
		{"concierge_queue_tasks", map[string]string{"queue": "inbound", "state": "pending"}, 0},
		{"concierge_db_connections", map[string]string{"state": "max"}, 20},
		{"concierge_db_connections", map[string]string{"state": "open"}, 1},
		{"concierge_redis_pool_connections", map[string]string{"state": "total"}, 1},
		{"concierge_retrieval_index_bytes", nil, 1},
		{"concierge_ready", nil, 1},
	}
	for _, m := range moved {
		if got := value(after, m.name, m.labels); got < m.min {
			t.Errorf("%s%v = %v, want at least %v", m.name, m.labels, got, m.min)
		}
	}

	// Every family of the contract, with exactly its labels.
	contract := map[string][]string{
		"concierge_http_requests_total":              {"code", "method", "route"},
		"concierge_http_request_duration_seconds":    {"method", "route"},
		"concierge_chat_time_to_first_token_seconds": {"stream"},
		"concierge_chat_duration_seconds":            {"stream"},
		"concierge_llm_requests_total":               {"model", "outcome", "provider"},
		"concierge_llm_request_duration_seconds":     {"model", "provider"},
		"concierge_llm_tokens_total":                 {"kind", "model", "provider"},
		"concierge_retrieval_duration_seconds":       nil,
		"concierge_retrieval_candidates":             nil,
		"concierge_fallbacks_total":                  {"reason"},
		"concierge_handoffs_total":                   nil,
		"concierge_streams_open":                     nil,
		"concierge_relay_lag_seconds":                nil,
		"concierge_relay_subscribers_cut_off_total":  nil,
		"concierge_inbound_events_total":             {"stage"},
		"concierge_deliveries_total":                 {"outcome"},
		"concierge_queue_tasks":                      {"queue", "state"},
		"concierge_queue_latency_seconds":            {"queue"},
		"concierge_db_connections":                   {"state"},
		"concierge_redis_pool_connections":           {"state"},
		"concierge_retrieval_index_bytes":            nil,
		"concierge_ready":                            nil,
	}
	for name, labels := range contract {
		f := after[name]
		if f == nil {
			t.Errorf("family %s is missing", name)
			continue
		}
		if got := labelNames(f); !slices.Equal(got, labels) {
			t.Errorf("%s labels = %v, want %v", name, got, labels)
		}
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if after[name] == nil {
			t.Errorf("family %s is missing", name)
		}
	}
	for name := range after {
		if !strings.HasPrefix(name, "concierge_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") &&
			!strings.HasPrefix(name, "promhttp_") {
			t.Errorf("unexpected family %s", name)
		}
		if _, ok := contract[name]; strings.HasPrefix(name, "concierge_") && !ok {
			t.Errorf("family %s is not in the contract (metrics-names.md)", name)
		}
	}

	// No label value is an id, a slug or a path with one.
	id := regexp.MustCompile(`[a-z]+_[0-9a-z]{26}`)
	for name, f := range after {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				if id.MatchString(v) || strings.Contains(v, "support") || strings.Contains(v, tn.ID) {
					t.Errorf("%s has label %s=%q, an id or slug", name, l.GetName(), v)
				}
				if l.GetName() == "route" && v != "unmatched" && !strings.HasPrefix(v, "/") {
					t.Errorf("%s route label %q is not a template", name, v)
				}
				if l.GetName() == "route" && strings.Contains(v, "nothing") {
					t.Errorf("%s route label %q is a request path", name, v)
				}
			}
		}
	}
}

// TestMetricsOffByDefault: serve and worker serve no metrics unless asked,
// and nothing is observed.
func TestMetricsOffByDefault(t *testing.T) {
	s := newStack(t, stackOptions{})
	if s.sys.metrics != nil {
		t.Fatal("metrics built without CONCIERGE_METRICS_ADDR")
	}
	addr, stop, err := s.sys.serveMetrics(context.Background(), false)
	if err != nil || addr != "" {
		t.Fatalf("serveMetrics without an address: %q %v", addr, err)
	}
	stop()
}
