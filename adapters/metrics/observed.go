package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/inbound"
	"github.com/conciergehq/concierge/ports"
)

// OtherModel is the model label of a call that named a model outside the
// configured ones (an agent's own choice): one series, however many names.
const OtherModel = "other"

// LLM wraps a language model adapter so each call is counted under
// provider and a model label: defaultModel for calls that keep the
// adapter's model, the requested name when it is one of known, OtherModel
// otherwise.
func (m *Metrics) LLM(provider, defaultModel string, known []string, llm ports.LLM) ports.LLM {
	allowed := map[string]bool{defaultModel: true}
	for _, k := range known {
		allowed[k] = true
	}
	return &observedLLM{m: m, provider: provider, defaultModel: defaultModel, known: allowed, llm: llm}
}

type observedLLM struct {
	m            *Metrics
	provider     string
	defaultModel string
	known        map[string]bool
	llm          ports.LLM
}

var _ ports.LLM = (*observedLLM)(nil)

func (o *observedLLM) Complete(ctx context.Context, req ports.CompletionRequest, onDelta func(string) error) (ports.Completion, error) {
	// An error onDelta returns (the engine's output filter stopping the
	// answer) is the caller's decision, not the model's failure.
	var stopped error
	start := time.Now()
	comp, err := o.llm.Complete(ctx, req, func(delta string) error {
		if err := onDelta(delta); err != nil {
			stopped = err
			return err
		}
		return nil
	})
	model := o.defaultModel
	if req.Model != "" {
		model = req.Model
		if !o.known[model] {
			model = OtherModel
		}
	}
	outcome := "ok"
	switch {
	case err != nil && (stopped == nil || !errors.Is(err, stopped)):
		outcome = "error"
	case comp.Declined:
		outcome = "declined"
	}
	o.m.llmRequests.WithLabelValues(o.provider, model, outcome).Inc()
	o.m.llmDuration.WithLabelValues(o.provider, model).Observe(time.Since(start).Seconds())
	if n := comp.Usage.PromptTokens; n > 0 {
		o.m.llmTokens.WithLabelValues(o.provider, model, "prompt").Add(float64(n))
	}
	if n := comp.Usage.CompletionTokens; n > 0 {
		o.m.llmTokens.WithLabelValues(o.provider, model, "completion").Add(float64(n))
	}
	return comp, err
}

// Retriever wraps a retriever so each retrieval's time and candidates are
// recorded: the candidates its trace lists when the caller asked for one,
// the chunks returned otherwise.
func (m *Metrics) Retriever(r ports.Retriever) ports.Retriever { return &observedRetriever{m: m, r: r} }

type observedRetriever struct {
	m *Metrics
	r ports.Retriever
}

func (o *observedRetriever) Retrieve(ctx context.Context, q ports.RetrievalQuery) ([]domain.Chunk, error) {
	start := time.Now()
	chunks, err := o.r.Retrieve(ctx, q)
	o.m.retrievalDuration.Observe(time.Since(start).Seconds())
	if err == nil {
		n := len(chunks)
		if q.Trace != nil && len(q.Trace.Candidates) > n {
			n = len(q.Trace.Candidates)
		}
		o.m.retrievalCandidates.Observe(float64(n))
	}
	return chunks, err
}

// InboundReceiver is the webhook edge's view of inbound.Service.
type InboundReceiver interface {
	Receive(ctx context.Context, ws *domain.Workspace, req inbound.Request) (domain.InboundEvent, error)
}

// Inbound counts the inbound events r accepts (stored and enqueued).
func (m *Metrics) Inbound(r InboundReceiver) InboundReceiver { return &observedInbound{m: m, r: r} }

type observedInbound struct {
	m *Metrics
	r InboundReceiver
}

func (o *observedInbound) Receive(ctx context.Context, ws *domain.Workspace, req inbound.Request) (domain.InboundEvent, error) {
	ev, err := o.r.Receive(ctx, ws, req)
	if err == nil {
		o.m.inbound.WithLabelValues("accepted").Inc()
	}
	return ev, err
}

// InboundProcessor is the worker's view of inbound.Service.
type InboundProcessor interface {
	ProcessInboundEvent(ctx context.Context, eventID string) error
}

// InboundProcessor counts the inbound events p processes, and the
// attempts that failed (a failed attempt is retried, and may be counted
// as processed later).
func (m *Metrics) InboundProcessor(p InboundProcessor) InboundProcessor {
	return &observedProcessor{m: m, p: p}
}

type observedProcessor struct {
	m *Metrics
	p InboundProcessor
}

func (o *observedProcessor) ProcessInboundEvent(ctx context.Context, eventID string) error {
	err := o.p.ProcessInboundEvent(ctx, eventID)
	stage := "processed"
	if err != nil {
		stage = "failed"
	}
	o.m.inbound.WithLabelValues(stage).Inc()
	return err
}

// DeliveryProcessor is the worker's view of delivery.Service.
type DeliveryProcessor interface {
	Deliver(ctx context.Context, deliveryID string) (delivery.Result, error)
}

// Deliveries counts the outcome of each delivery attempt p makes:
// delivered, failed for good, or retrying later. Tasks with nothing to
// attempt are not counted.
func (m *Metrics) Deliveries(p DeliveryProcessor) DeliveryProcessor {
	return &observedDeliveries{m: m, p: p}
}

type observedDeliveries struct {
	m *Metrics
	p DeliveryProcessor
}

func (o *observedDeliveries) Deliver(ctx context.Context, id string) (delivery.Result, error) {
	res, err := o.p.Deliver(ctx, id)
	if err == nil && res.Attempted {
		switch {
		case res.Status == domain.DeliveryDelivered:
			o.m.deliveries.WithLabelValues("delivered").Inc()
		case res.Status == domain.DeliveryFailed:
			o.m.deliveries.WithLabelValues("failed").Inc()
		default:
			o.m.deliveries.WithLabelValues("retrying").Inc()
		}
	}
	return res, err
}
