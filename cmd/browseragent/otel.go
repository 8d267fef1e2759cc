package main

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// newOTLP returns a tracer provider exporting over OTLP/HTTP. Where to is
// read from the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, ...;
// default http://localhost:4318). The returned shutdown flushes the spans.
func newOTLP(ctx context.Context) (*sdktrace.TracerProvider, func() error, error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("otel: %w", err)
	}
	res := resource.NewSchemaless(semconv.ServiceName("browseragent"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	shutdown := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return tp.Shutdown(sctx)
	}
	return tp, shutdown, nil
}
