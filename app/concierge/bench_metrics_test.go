package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/adapters/tracing"
	"github.com/conciergehq/concierge/core/domain"
)

// BenchmarkMetricsOverhead measures what metrics and tracing cost (issue
// 19: at most 5 %): chat throughput (POST /api/v2/chat, JSON, a new
// conversation each) and list throughput (GET /api/v2/conversations, a
// page of 20), each on two processes built alike, one with
// CONCIERGE_METRICS_ADDR set (every observer wired, its listener scraped
// once per round) and tracing on with sampling off (every span wrapper
// wired), and one with neither.
// Rounds alternate off and on (at least 5, CONCIERGE_BENCH_ROUNDS for
// more) and the median of the per-round ratios is reported.
func BenchmarkMetricsOverhead(b *testing.B) {
	off, offTenant := chatBenchStack(b, "0s")
	on, onTenant := metricsBenchStack(b)
	addr, stop, err := on.sys.serveMetrics(context.Background(), false)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	rounds := max(5, benchRounds())
	questions := benchQuestions

	chat := func(s *stack, key string) func(i int64) *http.Request {
		return func(i int64) *http.Request {
			req, _ := http.NewRequest("POST", s.base+"/api/v2/chat", strings.NewReader(fmt.Sprintf(`{"agent":"support","message":%q}`, questions[i%5])))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			return req
		}
	}
	list := func(s *stack, key string) func(i int64) *http.Request {
		return func(int64) *http.Request {
			req, _ := http.NewRequest("GET", s.base+"/api/v2/conversations?limit=20", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			return req
		}
	}
	b.ResetTimer()
	for _, tc := range []struct {
		name    string
		off, on func(i int64) *http.Request
	}{
		{"chat", chat(off, offTenant.Key), chat(on, onTenant.Key)},
		{"list", list(off, offTenant.Key), list(on, onTenant.Key)},
	} {
		var ratios []float64
		var offRPS, onRPS []float64
		for r := range rounds {
			// Alternate which goes first, so drift favours neither.
			var a, c loadResult
			if r%2 == 0 {
				a = load(b, tc.name+" observability off", 200, tc.off)
				c = load(b, tc.name+" observability on", 200, tc.on)
			} else {
				c = load(b, tc.name+" observability on", 200, tc.on)
				a = load(b, tc.name+" observability off", 200, tc.off)
			}
			scrape(b, addr) // as Prometheus would, between rounds
			ratios = append(ratios, c.RPS/a.RPS)
			offRPS, onRPS = append(offRPS, a.RPS), append(onRPS, c.RPS)
		}
		slices.Sort(ratios)
		slices.Sort(offRPS)
		slices.Sort(onRPS)
		med := ratios[len(ratios)/2]
		b.Logf("%s: metrics and tracing off %.0f req/s, on %.0f req/s (medians); median ratio on/off %.3f over %d rounds (target >= 0.95); ratios %.3f",
			tc.name, offRPS[len(offRPS)/2], onRPS[len(onRPS)/2], med, rounds, ratios)
		b.ReportMetric(med*100, "%-on-vs-off/"+tc.name)
	}
}

// metricsBenchStack is chatBenchStack's process with metrics on and
// tracing on with sampling off, as issue 19 budgets them: tracing built
// from OTEL_* exactly as `concierge serve` builds it (the OTLP/HTTP
// exporter pointed at a local receiver, which gets nothing unsampled).
func metricsBenchStack(b *testing.B) (*stack, tenant) {
	b.Helper()
	collector := httptest.NewServer(&otlpReceiver{})
	b.Cleanup(collector.Close)
	otel := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_TRACES_SAMPLER": "parentbased_always_off"}
	traces, err := tracing.New(func(k string) string { return otel[k] }, "concierge", "bench")
	if err != nil || !traces.Enabled() {
		b.Fatalf("tracing: %v", err)
	}
	s := newStack(b, stackOptions{traces: traces, env: map[string]string{
		"CONCIERGE_LOG_LEVEL": "error", "CONCIERGE_RATE_LIMIT_API_PER_MINUTE": "100000000",
		"CONCIERGE_LOCAL_TOKEN_DELAY": "0s", "CONCIERGE_METRICS_ADDR": "127.0.0.1:0",
	}})
	tn := s.newTenant(domain.PlanStandard)
	var agent agentBody
	s.do("POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Support"}, tn.auth()).decode(b, &agent)
	seedKnowledge(b, s, tn.ID, agent.ID, 1000)
	return s, tn
}
