package otelexport

import (
	otellog "go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

func meterOf(p metric.MeterProvider) metric.Meter {
	if p == nil {
		p = metricnoop.NewMeterProvider()
	}
	return p.Meter(Scope)
}

func loggerOf(p otellog.LoggerProvider) otellog.Logger {
	if p == nil {
		p = lognoop.NewLoggerProvider()
	}
	return p.Logger(Scope)
}

func tracerOf(p trace.TracerProvider) trace.Tracer {
	if p == nil {
		p = tracenoop.NewTracerProvider()
	}
	return p.Tracer(Scope)
}
