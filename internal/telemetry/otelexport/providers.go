// Package otelexport turns keel's telemetry lines into OpenTelemetry metrics, log events and
// spans, and exports them with the OpenTelemetry SDK: OTLP over gRPC or HTTP, Prometheus,
// or the console, as the [telemetry.Config] says. It is linked into keel-otel only, never into
// keel: the SDK's exporters cost every process that links them several milliseconds of package
// initialisation.
package otelexport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutlog"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keel-dev/keel/internal/telemetry"
)

// Providers are the SDK's meter, logger and tracer providers with the exporters the
// configuration names; a signal without exporters has a nil provider.
type Providers struct {
	Meter  *sdkmetric.MeterProvider
	Logs   *sdklog.LoggerProvider
	Traces *sdktrace.TracerProvider

	prom *http.Server
}

// New builds the providers. Console exporters write to console; logger reports what the
// exporters cannot do (http/json is sent as http/protobuf, which every OTLP/HTTP receiver
// must accept alongside JSON: the Go SDK has no JSON encoder).
func New(ctx context.Context, cfg telemetry.Config, console io.Writer, logger *slog.Logger) (*Providers, error) {
	res := resourceOf(cfg)
	p := &Providers{}
	var errs []error
	if cfg.Metrics.On() {
		opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, name := range cfg.Metrics.Exporters {
			r, err := p.metricReader(ctx, name, cfg, console, logger)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			opts = append(opts, sdkmetric.WithReader(r))
		}
		p.Meter = sdkmetric.NewMeterProvider(opts...)
	}
	if cfg.Logs.On() {
		opts := []sdklog.LoggerProviderOption{sdklog.WithResource(res)}
		for _, name := range cfg.Logs.Exporters {
			exp, err := logExporter(ctx, name, cfg.Logs, console, logger)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			opts = append(opts, sdklog.WithProcessor(sdklog.NewBatchProcessor(exp, sdklog.WithExportInterval(cfg.Logs.Interval))))
		}
		p.Logs = sdklog.NewLoggerProvider(opts...)
	}
	if cfg.Traces.On() {
		opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithIDGenerator(derivedIDs{}),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample()))}
		for _, name := range cfg.Traces.Exporters {
			exp, err := spanExporter(ctx, name, cfg.Traces, console, logger)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			opts = append(opts, sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(cfg.Traces.Interval)))
		}
		p.Traces = sdktrace.NewTracerProvider(opts...)
	}
	if err := errors.Join(errs...); err != nil {
		_ = p.Shutdown(ctx)
		return nil, err
	}
	return p, nil
}

// Shutdown flushes every signal and stops the exporters.
func (p *Providers) Shutdown(ctx context.Context) error {
	var errs []error
	if p.Traces != nil {
		errs = append(errs, p.Traces.Shutdown(ctx))
	}
	if p.Logs != nil {
		errs = append(errs, p.Logs.Shutdown(ctx))
	}
	if p.Meter != nil {
		errs = append(errs, p.Meter.Shutdown(ctx))
	}
	if p.prom != nil {
		errs = append(errs, p.prom.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

func resourceOf(cfg telemetry.Config) *resource.Resource {
	attrs := make([]attribute.KeyValue, 0, len(cfg.Resource))
	for k, v := range cfg.Resource {
		attrs = append(attrs, attribute.String(k, v))
	}
	return resource.NewSchemaless(attrs...)
}

func protocol(s telemetry.Signal, signal string, logger *slog.Logger) string {
	if s.Protocol == "http/json" {
		logger.Warn("OTLP http/json is sent as http/protobuf (the Go SDK encodes no JSON; OTLP/HTTP receivers accept both)", "signal", signal)
		return "http/protobuf"
	}
	return s.Protocol
}

// grpcTarget makes an http:// endpoint a plaintext gRPC connection, as the spec says.
func grpcInsecure(endpoint string) bool { return strings.HasPrefix(endpoint, "http://") }

func (p *Providers) metricReader(ctx context.Context, name string, cfg telemetry.Config, console io.Writer, logger *slog.Logger) (sdkmetric.Reader, error) {
	temporality := sdkmetric.DefaultTemporalitySelector
	if cfg.Delta {
		temporality = deltaTemporality
	}
	periodic := func(exp sdkmetric.Exporter) sdkmetric.Reader {
		return sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(cfg.Metrics.Interval))
	}
	switch name {
	case "console":
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(console), stdoutmetric.WithTemporalitySelector(temporality))
		if err != nil {
			return nil, fmt.Errorf("console metrics exporter: %w", err)
		}
		return periodic(exp), nil
	case "prometheus":
		return p.prometheus(cfg.PrometheusAddr)
	}
	s := cfg.Metrics
	if protocol(s, "metrics", logger) == "grpc" {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpointURL(s.Endpoint), otlpmetricgrpc.WithHeaders(s.Headers), otlpmetricgrpc.WithTemporalitySelector(temporality)}
		if grpcInsecure(s.Endpoint) {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		exp, err := otlpmetricgrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("OTLP gRPC metrics exporter for %s: %w", s.Endpoint, err)
		}
		return periodic(exp), nil
	}
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(s.Endpoint), otlpmetrichttp.WithHeaders(s.Headers), otlpmetrichttp.WithTemporalitySelector(temporality))
	if err != nil {
		return nil, fmt.Errorf("OTLP HTTP metrics exporter for %s: %w", s.Endpoint, err)
	}
	return periodic(exp), nil
}

// deltaTemporality reports counters and histograms as deltas (Claude Code's default); an
// up-down counter stays cumulative, as the specification requires.
func deltaTemporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	switch k {
	case sdkmetric.InstrumentKindUpDownCounter, sdkmetric.InstrumentKindObservableUpDownCounter:
		return metricdata.CumulativeTemporality
	}
	return metricdata.DeltaTemporality
}

// prometheus serves /metrics on addr from a registry of its own.
func (p *Providers) prometheus(addr string) (sdkmetric.Reader, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: listen on %s (OTEL_EXPORTER_PROMETHEUS_HOST/PORT): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	p.prom = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.prom.Serve(ln) }()
	return exp, nil
}

func logExporter(ctx context.Context, name string, s telemetry.Signal, console io.Writer, logger *slog.Logger) (sdklog.Exporter, error) {
	if name == "console" {
		return stdoutlog.New(stdoutlog.WithWriter(console))
	}
	if protocol(s, "logs", logger) == "grpc" {
		opts := []otlploggrpc.Option{otlploggrpc.WithEndpointURL(s.Endpoint), otlploggrpc.WithHeaders(s.Headers)}
		if grpcInsecure(s.Endpoint) {
			opts = append(opts, otlploggrpc.WithInsecure())
		}
		exp, err := otlploggrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("OTLP gRPC logs exporter for %s: %w", s.Endpoint, err)
		}
		return exp, nil
	}
	exp, err := otlploghttp.New(ctx, otlploghttp.WithEndpointURL(s.Endpoint), otlploghttp.WithHeaders(s.Headers))
	if err != nil {
		return nil, fmt.Errorf("OTLP HTTP logs exporter for %s: %w", s.Endpoint, err)
	}
	return exp, nil
}

func spanExporter(ctx context.Context, name string, s telemetry.Signal, console io.Writer, logger *slog.Logger) (sdktrace.SpanExporter, error) {
	if name == "console" {
		return stdouttrace.New(stdouttrace.WithWriter(console))
	}
	if protocol(s, "traces", logger) == "grpc" {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(s.Endpoint), otlptracegrpc.WithHeaders(s.Headers)}
		if grpcInsecure(s.Endpoint) {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("OTLP gRPC traces exporter for %s: %w", s.Endpoint, err)
		}
		return exp, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(s.Endpoint), otlptracehttp.WithHeaders(s.Headers))
	if err != nil {
		return nil, fmt.Errorf("OTLP HTTP traces exporter for %s: %w", s.Endpoint, err)
	}
	return exp, nil
}

// Signals returns the providers for a [Recorder]; a signal that is off stays nil (a nil
// pointer in the interface would not be).
func (p *Providers) Signals() Signals {
	var s Signals
	if p.Meter != nil {
		s.Meter = p.Meter
	}
	if p.Logs != nil {
		s.Logs = p.Logs
	}
	if p.Traces != nil {
		s.Traces = p.Traces
	}
	return s
}
