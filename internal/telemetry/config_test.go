package telemetry_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/telemetry"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	on := func(m map[string]string) map[string]string {
		m["CLAUDE_CODE_ENABLE_TELEMETRY"] = "1"
		return m
	}
	tests := []struct {
		name string
		env  map[string]string
		want telemetry.Config
	}{
		{"off by default, whatever else is set", map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, telemetry.Config{}},
		{"keel's own switch", map[string]string{"KEEL_ENABLE_TELEMETRY": "true"}, telemetry.Config{Enabled: true, IncludeSessionID: true, Delta: true,
			Resource: map[string]string{"service.name": "keel"}}},
		{"general endpoint gets each signal's path; per-signal ones win as given", on(map[string]string{
			"OTEL_METRICS_EXPORTER": "otlp,console", "OTEL_LOGS_EXPORTER": "otlp", "OTEL_TRACES_EXPORTER": "otlp",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://logs:9999/custom",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc, x=1",
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x=2", "OTEL_METRIC_EXPORT_INTERVAL": "1000", "OTEL_SERVICE_NAME": "agents",
			"OTEL_RESOURCE_ATTRIBUTES": "team.id=platform", "OTEL_LOG_USER_PROMPTS": "1", "OTEL_METRICS_INCLUDE_SESSION_ID": "false",
			"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "cumulative"}),
			telemetry.Config{Enabled: true, LogUserPrompts: true, Resource: map[string]string{"service.name": "agents", "team.id": "platform"},
				Metrics: telemetry.Signal{Exporters: []string{"otlp", "console"}, Protocol: "http/protobuf", Endpoint: "http://collector:4318/v1/metrics",
					Headers: map[string]string{"Authorization": "Bearer abc", "x": "1"}, Interval: time.Second}, //keel:duration a value parsed, not a limit
				Logs: telemetry.Signal{Exporters: []string{"otlp"}, Protocol: "http/protobuf", Endpoint: "http://logs:9999/custom",
					Headers: map[string]string{"Authorization": "Bearer abc", "x": "1"}, Interval: 5 * time.Second}, //keel:duration a value parsed, not a limit
				Traces: telemetry.Signal{Exporters: []string{"otlp"}, Protocol: "grpc", Endpoint: "http://collector:4318/",
					Headers: map[string]string{"Authorization": "Bearer abc", "x": "2"}, Interval: 5 * time.Second}}}, //keel:duration a value parsed, not a limit
		{"prometheus on its default port", on(map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}),
			telemetry.Config{Enabled: true, IncludeSessionID: true, Delta: true, Resource: map[string]string{"service.name": "keel"},
				Metrics: telemetry.Signal{Exporters: []string{"prometheus"}, Interval: time.Minute}, PrometheusAddr: "localhost:9464"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := telemetry.FromEnv(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Bad values name the variable and the valid options.
func TestFromEnvBadInput(t *testing.T) {
	_, err := telemetry.FromEnv(env(map[string]string{"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_METRICS_EXPORTER": "otlp,zipkin",
		"OTEL_LOGS_EXPORTER": "prometheus", "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/xml",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4317", "OTEL_METRIC_EXPORT_INTERVAL": "soon"}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`OTEL_METRICS_EXPORTER: "zipkin" is not one of otlp, prometheus, console, none`,
		`OTEL_LOGS_EXPORTER: "prometheus" is not one of otlp, console, none`, `"http/xml" is not one of grpc, http/protobuf, http/json`,
		`"collector:4317" for traces is not an http:// or https:// URL`, `OTEL_METRIC_EXPORT_INTERVAL="soon"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestTraceparent(t *testing.T) {
	trace, span, flags, err := telemetry.ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if err != nil || trace != "4bf92f3577b34da6a3ce929d0e0e4736" || span != "00f067aa0ba902b7" || flags != "01" {
		t.Errorf("parse: %s %s %s %v", trace, span, flags, err)
	}
	for _, bad := range []string{"", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "junk"} {
		if _, _, _, err := telemetry.ParseTraceparent(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if a, b := telemetry.SpanID(trace, telemetry.KindTool, "x"), telemetry.SpanID(trace, telemetry.KindTool, "y"); a == b || len(a) != 16 || a != telemetry.SpanID(trace, telemetry.KindTool, "x") {
		t.Errorf("derived span ids %s %s: want stable, distinct, 16 hex digits", a, b)
	}
}
