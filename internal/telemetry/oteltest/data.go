package oteltest

import (
	"encoding/hex"
	"fmt"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// Data is what a receiver got.
type Data struct {
	Metrics []*colmetrics.ExportMetricsServiceRequest
	Logs    []*collogs.ExportLogsServiceRequest
	Traces  []*coltrace.ExportTraceServiceRequest
}

// Point is one data point of a sum metric, with its attributes as strings.
type Point struct {
	Metric string
	Unit   string
	Value  float64
	Attrs  map[string]string
}

// Points returns every sum data point (counters) of the metric named name, over all exports.
// With delta temporality their values add up to the total.
func (d Data) Points(name string) []Point {
	var out []Point
	for _, req := range d.Metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != name {
						continue
					}
					switch v := m.Data.(type) {
					case *metricspb.Metric_Sum:
						for _, p := range v.Sum.DataPoints {
							val := p.GetAsDouble()
							if _, ok := p.Value.(*metricspb.NumberDataPoint_AsInt); ok {
								val = float64(p.GetAsInt())
							}
							out = append(out, Point{Metric: name, Unit: m.Unit, Value: val, Attrs: attrs(p.Attributes)})
						}
					case *metricspb.Metric_Histogram:
						for _, p := range v.Histogram.DataPoints {
							out = append(out, Point{Metric: name, Unit: m.Unit, Value: p.GetSum(), Attrs: attrs(p.Attributes)})
						}
					}
				}
			}
		}
	}
	return out
}

// Sum adds the values of the metric's points whose attributes include match.
func (d Data) Sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, p := range d.Points(name) {
		if includes(p.Attrs, match) {
			total += p.Value
		}
	}
	return total
}

// Event is one log record.
type Event struct {
	Name    string
	Body    string
	Attrs   map[string]string
	TraceID string
}

// Events returns the log records whose event name is name ("" for all), in export order.
func (d Data) Events(name string) []Event {
	var out []Event
	for _, req := range d.Logs {
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					if name != "" && lr.EventName != name {
						continue
					}
					out = append(out, Event{Name: lr.EventName, Body: lr.Body.GetStringValue(), Attrs: attrs(lr.Attributes), TraceID: hex.EncodeToString(lr.TraceId)})
				}
			}
		}
	}
	return out
}

// Span is one span, ids in hex.
type Span struct {
	Name                  string
	TraceID, ID, ParentID string
	Attrs                 map[string]string
	StartNanos, EndNanos  uint64
	Events                []string
	Resource              map[string]string
}

// Spans returns every span received.
func (d Data) Spans() []Span {
	var out []Span
	for _, req := range d.Traces {
		for _, rs := range req.ResourceSpans {
			res := attrs(rs.Resource.GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := Span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), ID: hex.EncodeToString(s.SpanId),
						ParentID: hex.EncodeToString(s.ParentSpanId), Attrs: attrs(s.Attributes), StartNanos: s.StartTimeUnixNano,
						EndNanos: s.EndTimeUnixNano, Resource: res}
					for _, e := range s.Events {
						sp.Events = append(sp.Events, e.Name)
					}
					out = append(out, sp)
				}
			}
		}
	}
	return out
}

// Resources returns the resource attributes of every metrics export.
func (d Data) Resources() []map[string]string {
	var out []map[string]string
	for _, req := range d.Metrics {
		for _, rm := range req.ResourceMetrics {
			out = append(out, attrs(rm.Resource.GetAttributes()))
		}
	}
	return out
}

func includes(attrs, match map[string]string) bool {
	for k, v := range match {
		if attrs[k] != v {
			return false
		}
	}
	return true
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = value(kv.Value)
	}
	return out
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var out []string
		for _, e := range x.ArrayValue.Values {
			out = append(out, value(e))
		}
		return fmt.Sprint(out)
	}
	return ""
}
