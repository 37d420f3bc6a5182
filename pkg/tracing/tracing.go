// Package tracing sets up OpenTelemetry tracing for a service and carries
// the W3C trace context through the places onceflow stores work: a webhook
// receipt, an outbox row, an SQS message attribute, a fiscal document. The
// exporter is off unless the standard OTEL environment asks for one:
// OTEL_TRACES_EXPORTER=otlp (with OTEL_EXPORTER_OTLP_ENDPOINT, ...) or
// console (spans as JSON on stdout, for local debugging).
package tracing

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

var propagator = propagation.TraceContext{}

// Setup installs the tracer provider the environment asks for and the W3C
// propagator; it returns the function that flushes and stops it. With no
// exporter configured, spans still carry trace context but nothing is
// exported.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagator)
	exporter, err := newExporter(ctx)
	if err != nil || exporter == nil {
		return func(context.Context) error { return nil }, err
	}
	res := resource.NewSchemaless(semconv.ServiceName("onceflow-" + service))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

func newExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	kind := os.Getenv("OTEL_TRACES_EXPORTER")
	if kind == "" && (os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") {
		kind = "otlp"
	}
	switch kind {
	case "", "none":
		return nil, nil
	case "otlp":
		return otlptracehttp.New(ctx)
	case "console":
		return stdouttrace.New()
	}
	return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: want otlp, console or none, got %q", kind)
}

// Tracer is the tracer of onceflow's spans.
func Tracer() trace.Tracer { return otel.Tracer("github.com/onceflow/onceflow") }

// Traceparent renders ctx's span context as a W3C traceparent header value,
// or "" when ctx carries none.
func Traceparent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// WithTraceparent returns ctx continuing the trace of a stored traceparent
// (a remote parent); an empty or malformed value leaves ctx as it is.
func WithTraceparent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}
