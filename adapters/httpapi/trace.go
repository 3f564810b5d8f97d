package httpapi

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// traceRequests gives every request a server span, named by its route
// template once the route is known (never by its path: ids would make
// every name unique), continuing the trace of a caller that sent a W3C
// traceparent. The span's context becomes the request's context, so the
// engine's, the store's and the queue's spans are its children and the
// access log's line carries its trace_id. Like the metrics, a stream's span
// ends when its headers are sent: the body is never buffered (the answer's
// own spans still belong to the trace).
func traceRequests(tp trace.TracerProvider) fiber.Handler {
	tracer := tp.Tracer("github.com/conciergehq/concierge/adapters/httpapi")
	propagator := propagation.TraceContext{}
	var routes routeTemplates
	return func(c *fiber.Ctx) error {
		// fasthttp reuses the request's memory once the handler returns and
		// the span outlives it (the exporter reads it later), so every
		// string taken from the request is copied.
		carrier := propagation.HeaderCarrier(http.Header{})
		for _, k := range propagator.Fields() {
			if v := c.Get(k); v != "" {
				carrier.Set(k, strings.Clone(v))
			}
		}
		method := strings.Clone(c.Method())
		ctx := propagator.Extract(c.UserContext(), carrier)
		ctx, span := tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer))
		c.SetUserContext(ctx)
		err := c.Next()
		if err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		status := c.Response().StatusCode()
		if span.IsRecording() {
			route := routes.label(c)
			span.SetName(method + " " + route)
			span.SetAttributes(attribute.String("http.request.method", method), semconv.HTTPRoute(strings.Clone(route)),
				semconv.HTTPResponseStatusCode(status), attribute.String("concierge.request_id", requestID(c)))
		}
		if status >= fiber.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
		return nil
	}
}
