package workers

import (
	"context"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// newTask builds a task that carries the trace of ctx, if any, in its
// headers (W3C traceparent and tracestate), so the worker's span
// continues the request that enqueued it. Outside a trace (a sweep, or
// tracing off) the task has no headers.
func newTask(ctx context.Context, typ string, payload []byte, opts ...asynq.Option) *asynq.Task {
	var headers map[string]string
	if trace.SpanContextFromContext(ctx).IsValid() {
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
		headers = carrier
	}
	return asynq.NewTaskWithHeaders(typ, payload, headers, opts...)
}

// continueTraces gives every task a consumer span, a child of the span
// that enqueued it when the task carries one; the handler runs under it,
// so its queries, deliveries and log lines belong to that trace.
func continueTraces(tp trace.TracerProvider) asynq.MiddlewareFunc {
	tracer := tp.Tracer("github.com/conciergehq/concierge/workers")
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier(t.Headers()))
			ctx, span := tracer.Start(ctx, t.Type(), trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(attribute.String("messaging.system", "asynq"), attribute.String("messaging.operation.type", "process")))
			err := next.ProcessTask(ctx, t)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
			return err
		})
	}
}
