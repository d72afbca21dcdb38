package otelexport

import (
	"go.opentelemetry.io/otel/metric"
)

// Scope is the instrumentation scope of everything keel exports.
const Scope = "github.com/keel-dev/keel"

// instruments are the metrics: Claude Code's names, units and attributes, then keel's own.
type instruments struct {
	sessions, tokens, cost, lines, commits, pullRequests, editDecisions, activeTime metric.Float64Counter

	cacheReadShare, mailLatency                        metric.Float64Histogram
	cacheBreaks, compactions, claims, mail, deliveries metric.Int64Counter
}

func newInstruments(m metric.Meter) instruments {
	f := func(name, unit, desc string) metric.Float64Counter {
		c, _ := m.Float64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	i := func(name, desc string) metric.Int64Counter {
		c, _ := m.Int64Counter(name, metric.WithUnit("{count}"), metric.WithDescription(desc))
		return c
	}
	share, _ := m.Float64Histogram("keel.cache.read_share", metric.WithUnit("1"),
		metric.WithDescription("share of a request's input tokens read from the prompt cache"),
		metric.WithExplicitBucketBoundaries(0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1))
	latency, _ := m.Float64Histogram("keel.team.message.latency", metric.WithUnit("s"),
		metric.WithDescription("how long a message between team members waited before its recipient read it"),
		metric.WithExplicitBucketBoundaries(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900))
	return instruments{
		mailLatency:    latency,
		sessions:       f("claude_code.session.count", "count", "Count of CLI sessions started"),
		tokens:         f("claude_code.token.usage", "tokens", "Number of tokens used"),
		cost:           f("claude_code.cost.usage", "USD", "Cost of the session"),
		lines:          f("claude_code.lines_of_code.count", "count", "Count of lines of code modified"),
		commits:        f("claude_code.commit.count", "count", "Number of git commits created"),
		pullRequests:   f("claude_code.pull_request.count", "count", "Number of pull requests created"),
		editDecisions:  f("claude_code.code_edit_tool.decision", "count", "Count of code editing tool permission decisions"),
		activeTime:     f("claude_code.active_time.total", "s", "Total active time in seconds"),
		cacheReadShare: share,
		cacheBreaks:    i("keel.cache.break.count", "prompt-cache breaks, by the prefix segment that changed"),
		compactions:    i("keel.compaction.count", "history compactions"),
		claims:         i("keel.team.claim.count", "board tasks taken up by team members"),
		mail:           i("keel.team.message.count", "messages between team members"),
		deliveries:     i("keel.background.delivery.count", "background agents' results delivered to their session"),
	}
}
