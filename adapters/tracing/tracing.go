// Package tracing is the deployment's OpenTelemetry tracing (issue 19): the
// tracer provider and its OTLP/HTTP exporter configured by the standard
// OTEL_* variables, the steps of the chat engine (ports.Tracer), spans
// around retrieval, the language model and every PostgreSQL statement,
// and log lines that carry their trace. HTTP requests, asynq tasks and
// outbound deliveries carry the trace at their own edges (adapters/httpapi,
// workers, adapters/helpdesk/webhook) with the W3C trace context.
//
// Off by default: without an OTLP endpoint nothing is built and every
// wrapper is left out, so tracing costs nothing when it is off.
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conciergehq/concierge/ports"
)

// Scope names the instrumentation in every span this service makes.
const Scope = "github.com/conciergehq/concierge"

// Tracing is a process's tracer provider. The zero value is not usable;
// build it with New (from the environment) or NewWith (tests).
type Tracing struct {
	provider trace.TracerProvider
	// sdk is the provider to flush and shut down; nil when tracing is off.
	sdk    *sdktrace.TracerProvider
	tracer trace.Tracer
	// Endpoint is where spans are sent ("" when off), for the start-up log.
	Endpoint string
}

var _ ports.Tracer = (*Tracing)(nil)

// New reads the OTEL_* variables through getenv and builds the provider:
//
//   - on when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL spans are
//     POSTed to) or OTEL_EXPORTER_OTLP_ENDPOINT (a base URL; /v1/traces is
//     appended) is set, unless OTEL_SDK_DISABLED=true or
//     OTEL_TRACES_EXPORTER=none;
//   - OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL must be http/protobuf (the
//     default; grpc and http/json are refused with a clear error);
//   - OTEL_EXPORTER_OTLP[_TRACES]_HEADERS ("k=v,k2=v2", values
//     URL-encoded) and _TIMEOUT (milliseconds) are honoured;
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as the specification
//     names them (default parentbased_always_on);
//   - OTEL_SERVICE_NAME (default service, "concierge") and
//     OTEL_RESOURCE_ATTRIBUTES name the process.
//
// Every error names the variable to fix.
func New(getenv func(string) string, service, version string) (*Tracing, error) {
	off := &Tracing{provider: noop.NewTracerProvider()}
	off.tracer = off.provider.Tracer(Scope)
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return off, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return off, nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported; use otlp (OTLP over HTTP) or none", exp)
	}
	endpoint := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if endpoint == "" {
		if base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); base != "" {
			endpoint = strings.TrimRight(base, "/") + "/v1/traces"
		}
	}
	if endpoint == "" {
		return off, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %q is not an http(s) URL", endpoint)
	}
	if p := first(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not supported; Concierge sends OTLP over HTTP (http/protobuf)", p)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint)}
	if h := first(getenv, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"); h != "" {
		headers, err := parsePairs(h)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %v", err)
		}
		opts = append(opts, otlptracehttp.WithHeaders(headers))
	}
	if t := first(getenv, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT: %q is not a positive number of milliseconds", t)
		}
		opts = append(opts, otlptracehttp.WithTimeout(time.Duration(ms)*time.Millisecond))
	}
	sampler, err := samplerFrom(getenv)
	if err != nil {
		return nil, err
	}
	res, err := resourceFrom(getenv, service, version)
	if err != nil {
		return nil, err
	}
	// The exporter connects lazily: a collector that is down loses spans
	// (the batcher drops them), never requests.
	exporter, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %v", err)
	}
	t := NewWith(sdktrace.NewBatchSpanProcessor(exporter), sampler, res)
	t.Endpoint = endpoint
	return t, nil
}

// NewWith builds tracing on a span processor of the caller's (tests use
// the SDK's in-memory exporter behind a simple processor).
func NewWith(processor sdktrace.SpanProcessor, sampler sdktrace.Sampler, res *resource.Resource) *Tracing {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(processor), sdktrace.WithSampler(sampler), sdktrace.WithResource(res))
	return &Tracing{provider: sdk, sdk: sdk, tracer: sdk.Tracer(Scope)}
}

// Enabled reports whether spans are recorded and sent anywhere.
func (t *Tracing) Enabled() bool { return t.sdk != nil }

// Provider is the tracer provider the edges start their spans with.
func (t *Tracing) Provider() trace.TracerProvider { return t.provider }

// Shutdown sends the spans still buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// Step starts a step of the engine (ports.Tracer).
func (t *Tracing) Step(ctx context.Context, name string) (context.Context, func(error)) {
	ctx, span := t.tracer.Start(ctx, name)
	return ctx, func(err error) { end(span, err) }
}

// end records err on span, if any, and ends it.
func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// samplerFrom reads OTEL_TRACES_SAMPLER and its argument.
func samplerFrom(getenv func(string) string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: %q is not a ratio between 0 and 1", arg)
		}
		return r, nil
	}
	switch name := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")); name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER: %q is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio", name)
	}
}

// resourceFrom names the process: OTEL_RESOURCE_ATTRIBUTES, then
// OTEL_SERVICE_NAME over it, as the specification orders them.
func resourceFrom(getenv func(string) string, service, version string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName(service), semconv.ServiceVersion(version)}
	if raw := strings.TrimSpace(getenv("OTEL_RESOURCE_ATTRIBUTES")); raw != "" {
		pairs, err := parsePairs(raw)
		if err != nil {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %v", err)
		}
		for k, v := range pairs {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	if name := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); name != "" {
		attrs = append(attrs, semconv.ServiceName(name))
	}
	return resource.NewSchemaless(attrs...), nil
}

// parsePairs reads "k=v,k2=v2" with URL-encoded values, as the OTEL_*
// header and resource variables are written.
func parsePairs(raw string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(raw, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", pair)
		}
		val, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("the value of %q is not URL-encoded: %v", k, err)
		}
		out[k] = val
	}
	return out, nil
}

// first returns the first of the variables that is set.
func first(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}
