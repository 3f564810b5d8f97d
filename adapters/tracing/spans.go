package tracing

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Retriever traces each retrieval: its span counts the chunks returned
// and the candidates considered.
func (t *Tracing) Retriever(next ports.Retriever) ports.Retriever {
	return &tracedRetriever{t: t, next: next}
}

type tracedRetriever struct {
	t    *Tracing
	next ports.Retriever
}

func (r *tracedRetriever) Retrieve(ctx context.Context, q ports.RetrievalQuery) ([]domain.Chunk, error) {
	ctx, span := r.t.tracer.Start(ctx, "retrieval")
	chunks, err := r.next.Retrieve(ctx, q)
	if span.IsRecording() {
		attrs := []attribute.KeyValue{attribute.Int("retrieval.limit", q.Limit), attribute.Int("retrieval.chunks", len(chunks))}
		if q.Trace != nil {
			attrs = append(attrs, attribute.Int("retrieval.candidates", len(q.Trace.Candidates)))
		}
		span.SetAttributes(attrs...)
	}
	end(span, err)
	return chunks, err
}

// LLM traces each model turn with the GenAI conventions' names: the
// provider, the model asked for and the one that answered, tokens in and
// out. An error the caller's onDelta returned (the engine stopping the
// answer) is the caller's decision and is not marked as the model's error.
func (t *Tracing) LLM(provider, model string, next ports.LLM) ports.LLM {
	return &tracedLLM{t: t, provider: provider, model: model, next: next}
}

type tracedLLM struct {
	t               *Tracing
	provider, model string
	next            ports.LLM
}

func (l *tracedLLM) Complete(ctx context.Context, req ports.CompletionRequest, onDelta func(string) error) (ports.Completion, error) {
	model := req.Model
	if model == "" {
		model = l.model
	}
	ctx, span := l.t.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", l.provider),
			attribute.String("gen_ai.request.model", model)))
	var stopped error
	comp, err := l.next.Complete(ctx, req, func(delta string) error {
		if err := onDelta(delta); err != nil {
			stopped = err
			return err
		}
		return nil
	})
	if span.IsRecording() {
		span.SetAttributes(attribute.String("gen_ai.response.model", comp.Model),
			attribute.Int("gen_ai.usage.input_tokens", comp.Usage.PromptTokens),
			attribute.Int("gen_ai.usage.output_tokens", comp.Usage.CompletionTokens),
			attribute.Bool("concierge.declined", comp.Declined))
	}
	if err != nil && err == stopped {
		span.SetAttributes(attribute.Bool("concierge.stopped_by_caller", true))
		end(span, nil)
		return comp, err
	}
	end(span, err)
	return comp, err
}

// QueryTracer is pgx's hook for every statement on the pool (gorm's
// included, which runs on the same pool). A statement outside any trace
// (the worker's sweeps) makes no span: one root trace per sweep query
// would bury the requests' traces.
func (t *Tracing) QueryTracer() pgx.QueryTracer { return queryTracer{t: t} }

type queryTracer struct{ t *Tracing }

var (
	_ pgx.QueryTracer = queryTracer{}
	_ pgx.BatchTracer = queryTracer{}
)

func (q queryTracer) start(ctx context.Context, sql string) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	op := operation(sql)
	ctx, span := q.t.tracer.Start(ctx, "postgres "+op, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		// The statement's text has placeholders, never the values.
		span.SetAttributes(semconv.DBSystemNamePostgreSQL, semconv.DBOperationName(op), semconv.DBQueryText(truncate(sql, 2000)))
	}
	return context.WithValue(ctx, statementSpan{}, span)
}

// statementSpan keys the span start made, so finish ends that one and
// never the request's span when start made none.
type statementSpan struct{}

func (q queryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return q.start(ctx, data.SQL)
}

func (q queryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	q.finish(ctx, data.Err)
}

func (q queryTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	sql := "BATCH"
	if data.Batch != nil && len(data.Batch.QueuedQueries) > 0 {
		sql = data.Batch.QueuedQueries[0].SQL
	}
	return q.start(ctx, sql)
}

func (q queryTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (q queryTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	q.finish(ctx, data.Err)
}

// finish ends the statement's span, if start made one (pgx hands back
// the context start returned).
func (q queryTracer) finish(ctx context.Context, err error) {
	if span, ok := ctx.Value(statementSpan{}).(trace.Span); ok {
		end(span, err)
	}
}

// operation is a statement's first keyword (SELECT, INSERT, WITH...), a
// bounded span name.
func operation(sql string) string {
	f := strings.Fields(strings.TrimSpace(sql))
	if len(f) == 0 {
		return "QUERY"
	}
	op := strings.ToUpper(f[0])
	switch op {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "SET", "LISTEN", "NOTIFY", "COPY", "LOCK", "BATCH":
		return op
	}
	return "QUERY"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
