package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A trace survives being stored as a traceparent string and picked up
// again, as it does through a receipt, an outbox row and an SQS message.
func TestTraceContinuesThroughAStoredTraceparent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	if _, err := Setup(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	ctx, webhook := Tracer().Start(context.Background(), "webhook.receive")
	stored := Traceparent(ctx)
	webhook.End()
	if len(stored) != 55 {
		t.Fatalf("traceparent %q is not a W3C value", stored)
	}
	_, emit := Tracer().Start(WithTraceparent(context.Background(), stored), "document.emit")
	emit.End()
	spans := rec.Ended()
	if len(spans) != 2 || spans[1].Parent().SpanID() != spans[0].SpanContext().SpanID() || spans[1].SpanContext().TraceID() != spans[0].SpanContext().TraceID() {
		t.Fatalf("the second span does not continue the first: %+v", spans)
	}
	if got := WithTraceparent(context.Background(), "garbage"); Traceparent(got) != "" {
		t.Fatal("a malformed traceparent produced a trace context")
	}
}

func TestSetupRefusesAnUnknownExporter(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	if _, err := Setup(context.Background(), "test"); err == nil {
		t.Fatal("an unknown exporter was accepted")
	}
}
