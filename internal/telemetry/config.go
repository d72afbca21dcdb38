// Package telemetry exports what keel's agents do and what they cost as OpenTelemetry metrics,
// log events and traces under Claude Code's names (claude_code.token.usage, the api_request
// event, the claude_code.interaction span…), so dashboards built for Claude Code work
// unchanged, plus keel's own under keel.* (cache economy, compactions, teams).
//
// It is off by default and costs nothing then: this package links no OpenTelemetry code. When
// CLAUDE_CODE_ENABLE_TELEMETRY=1 (or KEEL_ENABLE_TELEMETRY=1) switches it on, [Start] runs the
// companion program keel-otel and streams the session's events to it as JSON lines; keel-otel
// (package [otelexport]) holds the SDK and the exporters, whose package initialisation alone
// would cost every keel start several milliseconds and half a megabyte.
//
// Configuration is the standard OTEL_* variables, read once by [FromEnv] from a lookup the
// caller composes: the process environment and user or managed settings, never a project's
// settings (an untrusted repository must not choose where telemetry goes).
package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/envvar"
)

// Config is the telemetry configuration, serialised to keel-otel as its first line.
type Config struct {
	// Enabled is CLAUDE_CODE_ENABLE_TELEMETRY or KEEL_ENABLE_TELEMETRY.
	Enabled bool `json:"enabled"`
	// Metrics, Logs and Traces name each signal's exporters: otlp, prometheus (metrics
	// only), console; empty means none.
	Metrics Signal `json:"metrics"`
	Logs    Signal `json:"logs"`
	Traces  Signal `json:"traces"`
	// Resource holds OTEL_RESOURCE_ATTRIBUTES and service.name (OTEL_SERVICE_NAME, default
	// "keel").
	Resource map[string]string `json:"resource"`
	// LogUserPrompts, LogToolDetails and LogToolContent are the OTEL_LOG_* switches: prompt
	// text, tool parameters and inputs, tool input and output bodies on spans. Off, their
	// content never leaves the machine.
	LogUserPrompts bool `json:"logUserPrompts,omitempty"`
	LogToolDetails bool `json:"logToolDetails,omitempty"`
	LogToolContent bool `json:"logToolContent,omitempty"`
	// IncludeSessionID and IncludeVersion put session.id and app.version on metrics
	// (OTEL_METRICS_INCLUDE_SESSION_ID, default true; OTEL_METRICS_INCLUDE_VERSION, default
	// false). Events always carry both.
	IncludeSessionID bool `json:"includeSessionId"`
	IncludeVersion   bool `json:"includeVersion"`
	// Delta is OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta, Claude Code's default.
	Delta bool `json:"delta"`
	// PrometheusAddr is where the prometheus exporter serves /metrics
	// (OTEL_EXPORTER_PROMETHEUS_HOST and _PORT, default localhost:9464).
	PrometheusAddr string `json:"prometheusAddr,omitempty"`
}

// Signal is one signal's exporters and where OTLP sends it.
type Signal struct {
	Exporters []string `json:"exporters,omitempty"`
	// Protocol is grpc, http/protobuf or http/json.
	Protocol string `json:"protocol,omitempty"`
	// Endpoint is the full URL: for HTTP with the signal's path (/v1/metrics…), for gRPC the
	// scheme says whether TLS is used (http: plaintext).
	Endpoint string            `json:"endpoint,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	// Interval is how often the signal is exported (OTEL_METRIC_EXPORT_INTERVAL,
	// OTEL_LOGS_EXPORT_INTERVAL, OTEL_TRACES_EXPORT_INTERVAL, in milliseconds).
	Interval time.Duration `json:"interval,omitempty"`
}

// On reports whether the signal has any exporter.
func (s Signal) On() bool { return len(s.Exporters) > 0 }

// Has reports whether the signal uses exporter name.
func (s Signal) Has(name string) bool { return slices.Contains(s.Exporters, name) }

// Active reports whether telemetry is on and some signal is exported.
func (c Config) Active() bool { return c.Enabled && (c.Metrics.On() || c.Logs.On() || c.Traces.On()) }

// Protocols keel-otel speaks, and exporters per signal.
var (
	protocols        = []string{"grpc", "http/protobuf", "http/json"}
	metricsExporters = []string{"otlp", "prometheus", "console", "none"}
	otherExporters   = []string{"otlp", "console", "none"}
)

// Default intervals, Claude Code's.
const (
	defaultMetricInterval = 60 * time.Second
	defaultLogsInterval   = 5 * time.Second
	defaultTracesInterval = 5 * time.Second
)

// FromEnv reads the configuration through getenv. Bad values are errors naming the variable
// and the valid options; a switched-off configuration is never an error, whatever the other
// variables say.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{Enabled: envvar.Truthy(getenv("CLAUDE_CODE_ENABLE_TELEMETRY")) || envvar.Truthy(getenv("KEEL_ENABLE_TELEMETRY"))}
	if !c.Enabled {
		return c, nil
	}
	var errs []error
	c.IncludeSessionID = boolVar(getenv, "OTEL_METRICS_INCLUDE_SESSION_ID", true, &errs)
	c.IncludeVersion = boolVar(getenv, "OTEL_METRICS_INCLUDE_VERSION", false, &errs)
	c.LogUserPrompts = envvar.Truthy(getenv("OTEL_LOG_USER_PROMPTS"))
	c.LogToolDetails = envvar.Truthy(getenv("OTEL_LOG_TOOL_DETAILS"))
	c.LogToolContent = envvar.Truthy(getenv("OTEL_LOG_TOOL_CONTENT"))
	switch t := strings.ToLower(strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"))); t {
	case "", "delta":
		c.Delta = true
	case "cumulative":
	default:
		errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=%q is not one of delta, cumulative", t))
	}
	c.Metrics = signal(getenv, "METRICS", "OTEL_METRICS_EXPORTER", "OTEL_METRIC_EXPORT_INTERVAL", "/v1/metrics", metricsExporters, defaultMetricInterval, &errs)
	c.Logs = signal(getenv, "LOGS", "OTEL_LOGS_EXPORTER", "OTEL_LOGS_EXPORT_INTERVAL", "/v1/logs", otherExporters, defaultLogsInterval, &errs)
	c.Traces = signal(getenv, "TRACES", "OTEL_TRACES_EXPORTER", "OTEL_TRACES_EXPORT_INTERVAL", "/v1/traces", otherExporters, defaultTracesInterval, &errs)
	c.Resource = resource(getenv, &errs)
	if c.Metrics.Has("prometheus") {
		host, port := getenv("OTEL_EXPORTER_PROMETHEUS_HOST"), getenv("OTEL_EXPORTER_PROMETHEUS_PORT")
		if host == "" {
			host = "localhost"
		}
		if port == "" {
			port = "9464"
		}
		c.PrometheusAddr = host + ":" + port
	}
	return c, errors.Join(errs...)
}

// signal reads one signal's exporters, protocol, endpoint, headers and interval: the
// per-signal variables (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT…) override the general ones.
func signal(getenv func(string) string, name, exporterVar, intervalVar, path string, valid []string, interval time.Duration, errs *[]error) Signal {
	var s Signal
	for _, e := range strings.Split(getenv(exporterVar), ",") {
		e = strings.TrimSpace(e)
		switch {
		case e == "" || e == "none":
		case !slices.Contains(valid, e):
			*errs = append(*errs, fmt.Errorf("%s: %q is not one of %s", exporterVar, e, strings.Join(valid, ", ")))
		case !slices.Contains(s.Exporters, e):
			s.Exporters = append(s.Exporters, e)
		}
	}
	if !s.On() {
		return Signal{}
	}
	s.Interval = interval
	if v := strings.TrimSpace(getenv(intervalVar)); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			*errs = append(*errs, fmt.Errorf("%s=%q is not a positive number of milliseconds", intervalVar, v))
		} else {
			s.Interval = time.Duration(ms) * time.Millisecond
		}
	}
	if !s.Has("otlp") {
		return s
	}
	s.Protocol = firstSet(getenv, "OTEL_EXPORTER_OTLP_"+name+"_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	if s.Protocol == "" {
		s.Protocol = "http/protobuf"
	}
	if !slices.Contains(protocols, s.Protocol) {
		*errs = append(*errs, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL (or _%s_PROTOCOL)=%q is not one of %s", name, s.Protocol, strings.Join(protocols, ", ")))
	}
	s.Endpoint = endpoint(getenv, name, s.Protocol, path, errs)
	s.Headers = headers(getenv("OTEL_EXPORTER_OTLP_HEADERS"), "OTEL_EXPORTER_OTLP_HEADERS", errs)
	for k, v := range headers(getenv("OTEL_EXPORTER_OTLP_"+name+"_HEADERS"), "OTEL_EXPORTER_OTLP_"+name+"_HEADERS", errs) {
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers[k] = v
	}
	return s
}

// endpoint follows the OTLP exporter specification: a per-signal endpoint is used as given;
// the general one is a base to which HTTP adds the signal's path.
func endpoint(getenv func(string) string, name, protocol, path string, errs *[]error) string {
	v, own := getenv("OTEL_EXPORTER_OTLP_"+name+"_ENDPOINT"), true
	if v == "" {
		v, own = getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), false
	}
	if v == "" {
		if protocol == "grpc" {
			return "http://localhost:4317"
		}
		return "http://localhost:4318" + path
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		*errs = append(*errs, fmt.Errorf("OTLP endpoint %q for %s is not an http:// or https:// URL", v, strings.ToLower(name)))
		return ""
	}
	if protocol != "grpc" && !own {
		return strings.TrimSuffix(v, "/") + path
	}
	return v
}

// headers parses key=value pairs separated by commas, values URL-encoded (the spec's form).
func headers(v, variable string, errs *[]error) map[string]string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			*errs = append(*errs, fmt.Errorf("%s: %q is not key=value", variable, strings.TrimSpace(kv)))
			continue
		}
		if dec, err := url.QueryUnescape(strings.TrimSpace(val)); err == nil {
			val = dec
		}
		out[k] = strings.TrimSpace(val)
	}
	return out
}

func resource(getenv func(string) string, errs *[]error) map[string]string {
	attrs := headers(getenv("OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES", errs)
	if attrs == nil {
		attrs = map[string]string{}
	}
	if name := getenv("OTEL_SERVICE_NAME"); name != "" {
		attrs["service.name"] = name
	} else if attrs["service.name"] == "" {
		attrs["service.name"] = "keel"
	}
	return attrs
}

func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return strings.ToLower(v)
		}
	}
	return ""
}

func boolVar(getenv func(string) string, name string, def bool, errs *[]error) bool {
	v := strings.ToLower(strings.TrimSpace(getenv(name)))
	switch v {
	case "":
		return def
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	*errs = append(*errs, fmt.Errorf("%s=%q is not true or false", name, v))
	return def
}
