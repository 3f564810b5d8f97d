// Package metrics is the Prometheus adapter: one registry per process
// (never the global default one), the families of docs/operations.md, and
// the observers the core and the other edges report to. Nothing in core
// imports it; the app wires it in when CONCIERGE_METRICS_ADDR is set.
//
// Every label is bounded: route templates (never request paths), methods
// from a fixed list, status codes, provider and model names from the
// configuration, fallback reasons and outcomes from the domain's enums.
// No label ever holds an id or a slug.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Namespace starts every family of ours.
const Namespace = "concierge"

// UnmatchedRoute is the route label of a request no route matched (a 404
// of an unknown path): one series whatever the path was.
const UnmatchedRoute = "unmatched"

// Metrics holds the process's registry and every family written by the
// observers. Build it with New; it is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	firstToken   *prometheus.HistogramVec
	chatDuration *prometheus.HistogramVec
	fallbacks    *prometheus.CounterVec
	handoffs     prometheus.Counter

	llmRequests *prometheus.CounterVec
	llmDuration *prometheus.HistogramVec
	llmTokens   *prometheus.CounterVec

	retrievalDuration   prometheus.Histogram
	retrievalCandidates prometheus.Histogram

	relayLag prometheus.Histogram
	cutOff   prometheus.Counter

	inbound    *prometheus.CounterVec
	deliveries *prometheus.CounterVec

	// streams counts the live streams open; set by the serving process
	// (SetStreams), 0 elsewhere.
	mu      sync.Mutex
	streams func() int

	// names are the concierge_ families registered, in order (Names).
	names []string
}

// New returns the metrics on a new registry, with the Go and process
// collectors.
func New() *Metrics {
	// Buckets, in seconds. HTTP requests span a millisecond to tens of
	// seconds; answers and model calls run longer.
	var (
		requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
		answerBuckets  = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120}
		lagBuckets     = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
		fastBuckets    = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
		countBuckets   = []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
	)
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg}
	f := factory{m}
	m.httpRequests = f.counterVec("http_requests_total", "HTTP requests answered, by route template, method and status code.", "route", "method", "code")
	m.httpDuration = f.histogramVec("http_request_duration_seconds", "Time to answer an HTTP request, by route template and method; a stream counts until its headers are sent.", requestBuckets, "route", "method")
	m.firstToken = f.histogramVec("chat_time_to_first_token_seconds", "Time from the start of an answer to its first text, by whether the caller streamed.", answerBuckets, "stream")
	m.chatDuration = f.histogramVec("chat_duration_seconds", "Time to finish an answer, stored, by whether the caller streamed.", answerBuckets, "stream")
	m.fallbacks = f.counterVec("fallbacks_total", "Answers that were the agent's fallback message, by reason.", "reason")
	m.handoffs = f.counter("handoffs_total", "Conversations handed to people (moved to HANDOFF_REQUESTED).")
	m.llmRequests = f.counterVec("llm_requests_total", "Language model calls, by provider, model and outcome (ok, error, declined).", "provider", "model", "outcome")
	m.llmDuration = f.histogramVec("llm_request_duration_seconds", "Time of one language model call, streamed to its end.", answerBuckets, "provider", "model")
	m.llmTokens = f.counterVec("llm_tokens_total", "Tokens the language models reported, by kind (prompt, completion).", "provider", "model", "kind")
	m.retrievalDuration = f.histogram("retrieval_duration_seconds", "Time of one retrieval over an agent's knowledge.", fastBuckets)
	m.retrievalCandidates = f.histogram("retrieval_candidates", "Candidate passages one retrieval ranked.", countBuckets)
	m.relayLag = f.histogram("relay_lag_seconds", "Time from an event's entry in the session log to its arrival at this pod's relay.", lagBuckets)
	m.cutOff = f.counter("relay_subscribers_cut_off_total", "Live-stream followers taken off the live feed: fell behind their buffer (sent to the log), or ended by a Redis outage over the limit.")
	m.inbound = f.counterVec("inbound_events_total", "Inbound webhook events, by stage (accepted, processed, failed).", "stage")
	m.deliveries = f.counterVec("deliveries_total", "Delivery attempts of handoffs and events, by outcome (delivered, failed, retrying).", "outcome")
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.register("streams_open", prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "streams_open", Help: "Live streams (SSE) this pod serves now."},
		func() float64 { return float64(m.openStreams()) }))
	// Series known in advance start at zero, so rates and alerts work
	// before the first event.
	for _, s := range []string{"accepted", "processed", "failed"} {
		m.inbound.WithLabelValues(s)
	}
	for _, o := range []string{"delivered", "failed", "retrying"} {
		m.deliveries.WithLabelValues(o)
	}
	return m
}

// Registry is the process's registry, for collectors the app adds.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// SetStreams gives the count of open live streams (the relay hub's).
func (m *Metrics) SetStreams(count func() int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.streams = count
}

func (m *Metrics) openStreams() int {
	m.mu.Lock()
	count := m.streams
	m.mu.Unlock()
	if count == nil {
		return 0
	}
	return count()
}

// ObserveRequest counts one answered HTTP request. route must be a route
// template (or UnmatchedRoute); method is bounded here.
func (m *Metrics) ObserveRequest(route, method string, code int, elapsed time.Duration) {
	method = methodLabel(method)
	m.httpRequests.WithLabelValues(route, method, codeLabel(code)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(elapsed.Seconds())
}

var _ ports.ChatObserver = (*Metrics)(nil)

// Answered records a finished answer (ports.ChatObserver).
func (m *Metrics) Answered(_ context.Context, stream bool, firstToken, total time.Duration, fallback domain.FallbackReason) {
	s := strconv.FormatBool(stream)
	if firstToken > 0 {
		m.firstToken.WithLabelValues(s).Observe(firstToken.Seconds())
	}
	m.chatDuration.WithLabelValues(s).Observe(total.Seconds())
	if fallback != domain.FallbackNone {
		m.fallbacks.WithLabelValues(string(fallback)).Inc()
	}
}

var _ ports.HandoffObserver = (*Metrics)(nil)

// HandedOff counts a conversation handed to people (ports.HandoffObserver).
func (m *Metrics) HandedOff(context.Context) { m.handoffs.Inc() }

// RelayLag records how late an event reached this pod's relay.
func (m *Metrics) RelayLag(d time.Duration) { m.relayLag.Observe(max(d, 0).Seconds()) }

// SubscriberCutOff counts a follower taken off the live feed.
func (m *Metrics) SubscriberCutOff() { m.cutOff.Inc() }

// methodLabel keeps the method label to the methods the app serves; the
// constants also keep fasthttp's reused buffers out of the label values.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodHead:
		return http.MethodHead
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodOptions:
		return http.MethodOptions
	}
	return "OTHER"
}

func codeLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// register adds a concierge_ family (name without the namespace) to the
// registry and to Names.
func (m *Metrics) register(name string, c prometheus.Collector) {
	m.reg.MustRegister(c)
	m.names = append(m.names, Namespace+"_"+name)
}

// factory registers families under the namespace.
type factory struct{ m *Metrics }

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	f.m.register(name, c)
	return c
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help})
	f.m.register(name, c)
	return c
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.m.register(name, h)
	return h
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets})
	f.m.register(name, h)
	return h
}
