// Package oteltest is an in-process OTLP receiver for tests: one gRPC and one HTTP listener on
// loopback that keep every metric, log record and span exported to them, with helpers to
// find what a test asserts (a metric's sum by attributes, the events by name, the span tree).
package oteltest

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Receiver keeps what it received, whichever transport brought it.
type Receiver struct {
	grpcAddr, httpAddr string

	// mu guards got and changed.
	mu      sync.Mutex
	got     Data
	changed chan struct{}
}

// Start runs the receiver until the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{changed: make(chan struct{})}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.grpcAddr, r.httpAddr = gl.Addr().String(), hl.Addr().String()
	gs := grpc.NewServer()
	colmetrics.RegisterMetricsServiceServer(gs, metricsService{r: r})
	collogs.RegisterLogsServiceServer(gs, logsService{r: r})
	coltrace.RegisterTraceServiceServer(gs, traceService{r: r})
	hs := &http.Server{Handler: http.HandlerFunc(r.serveHTTP)}
	go func() { _ = gs.Serve(gl) }()
	go func() { _ = hs.Serve(hl) }()
	t.Cleanup(func() {
		gs.Stop()
		_ = hs.Close()
	})
	return r
}

// GRPCEndpoint and HTTPEndpoint are OTEL_EXPORTER_OTLP_ENDPOINT values for each transport.
func (r *Receiver) GRPCEndpoint() string { return "http://" + r.grpcAddr }

// HTTPEndpoint is the base URL of the OTLP/HTTP listener (the exporters add /v1/metrics…).
func (r *Receiver) HTTPEndpoint() string { return "http://" + r.httpAddr }

// Data returns a copy of everything received so far.
func (r *Receiver) Data() Data {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Data{Metrics: append([]*colmetrics.ExportMetricsServiceRequest(nil), r.got.Metrics...),
		Logs:   append([]*collogs.ExportLogsServiceRequest(nil), r.got.Logs...),
		Traces: append([]*coltrace.ExportTraceServiceRequest(nil), r.got.Traces...)}
}

// Changed returns a channel closed at the next export received.
func (r *Receiver) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *Receiver) add(f func(*Data)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.got)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	decode := proto.Unmarshal
	if strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") {
		decode = protojson.Unmarshal
	}
	var msg proto.Message
	switch req.URL.Path {
	case "/v1/metrics":
		m := &colmetrics.ExportMetricsServiceRequest{}
		msg = m
		defer func() { r.add(func(d *Data) { d.Metrics = append(d.Metrics, m) }) }()
	case "/v1/logs":
		m := &collogs.ExportLogsServiceRequest{}
		msg = m
		defer func() { r.add(func(d *Data) { d.Logs = append(d.Logs, m) }) }()
	case "/v1/traces":
		m := &coltrace.ExportTraceServiceRequest{}
		msg = m
		defer func() { r.add(func(d *Data) { d.Traces = append(d.Traces, m) }) }()
	default:
		http.NotFound(w, req)
		return
	}
	if err := decode(body, msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

type metricsService struct {
	colmetrics.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metricsService) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	s.r.add(func(d *Data) { d.Metrics = append(d.Metrics, req) })
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

type logsService struct {
	collogs.UnimplementedLogsServiceServer
	r *Receiver
}

func (s logsService) Export(_ context.Context, req *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	s.r.add(func(d *Data) { d.Logs = append(d.Logs, req) })
	return &collogs.ExportLogsServiceResponse{}, nil
}

type traceService struct {
	coltrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	s.r.add(func(d *Data) { d.Traces = append(d.Traces, req) })
	return &coltrace.ExportTraceServiceResponse{}, nil
}
