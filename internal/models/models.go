// Package models is keel's table of Claude models: their ids, the aliases users type (opus,
// sonnet, haiku, fable, default, best…), context windows and output limits. The table built
// into keel is the offline fallback; a [Catalog] adds what the API's GET /v1/models reports,
// cached under KEEL_HOME for a day, so a model released after this keel resolves without an
// update. Prices are the cost package's.
package models

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/lazy"
)

// Model is one model as keel knows it.
type Model struct {
	ID          string    `json:"id"`
	DisplayName string    `json:"display_name,omitempty"`
	Created     time.Time `json:"created_at,omitzero"`
	// ContextWindow is the most input tokens a request may carry (max_input_tokens), and
	// MaxOutputTokens the largest max_tokens (max_tokens); 0 when unknown.
	ContextWindow   int64 `json:"max_input_tokens,omitempty"`
	MaxOutputTokens int64 `json:"max_tokens,omitempty"`
}

// Family is the model's line — opus, sonnet, haiku, fable, mythos — or "" for a model that
// is not a Claude model keel can tell.
func (m Model) Family() string { return family(m.ID) }

// Families are the lines an alias of the same name picks the newest of.
var Families = []string{"opus", "sonnet", "haiku", "fable"}

// Aliases are the short names users type for a model, as Claude Code takes them: a family
// name picks its newest model; default is the model keel uses when none is named; best is
// the most capable line. "[1m]" after an alias asks for a 1M-token window, which every
// current model has, so it changes nothing.
var Aliases = []string{"default", "best", "opus", "sonnet", "haiku", "fable", "opusplan"}

// DefaultAlias is what "default" means, and the model used when none is named: Anthropic's
// recommendation for most work (platform.claude.com, models overview: "start with Claude Opus
// 5.5 for most workloads").
const DefaultAlias = "opus"

// bestAlias is the most capable line ("for demanding reasoning and long-horizon agentic work").
const bestAlias = "fable"

// DefaultModel is the model "default" resolves to without a fresher list from the API.
const DefaultModel = "claude-opus-5-5"

// DefaultContextWindow is assumed for a model keel has no figure for: the smallest window of
// any current Claude model, so compaction comes early rather than too late.
const DefaultContextWindow = 200_000

// builtin is the offline table, from the model pages on platform.claude.com (checked
// 2026-12-01). Release dates order a family when no list from the API says otherwise.
var builtin = lazy.Value[[]Model]{New: func() []Model {
	return []Model{
		{ID: "claude-fable-5-2", DisplayName: "Claude Fable 5.2", Created: day(2026, 11, 9), ContextWindow: 1_000_000, MaxOutputTokens: 128_000},
		{ID: "claude-haiku-5-5", DisplayName: "Claude Haiku 5.5", Created: day(2026, 10, 7), ContextWindow: 1_000_000, MaxOutputTokens: 128_000},
		{ID: "claude-sonnet-5-5", DisplayName: "Claude Sonnet 5.5", Created: day(2026, 9, 28), ContextWindow: 1_000_000, MaxOutputTokens: 128_000},
		{ID: "claude-opus-5-5", DisplayName: "Claude Opus 5.5", Created: day(2026, 9, 22), ContextWindow: 1_000_000, MaxOutputTokens: 128_000},
		{ID: "claude-fable-5-1", DisplayName: "Claude Fable 5.1", Created: day(2026, 9, 1), ContextWindow: 1_000_000, MaxOutputTokens: 128_000},
		{ID: "claude-opus-5", DisplayName: "Claude Opus 5", Created: day(2026, 7, 24), ContextWindow: 1_000_000, MaxOutputTokens: 128_000},
		{ID: "claude-sonnet-5", DisplayName: "Claude Sonnet 5", Created: day(2026, 6, 30), ContextWindow: 1_000_000, MaxOutputTokens: 128_000},
		{ID: "claude-fable-5", DisplayName: "Claude Fable 5", Created: day(2026, 6, 9), ContextWindow: 1_000_000, MaxOutputTokens: 128_000},
		{ID: "claude-haiku-4-5", DisplayName: "Claude Haiku 4.5", Created: day(2025, 10, 15), ContextWindow: 200_000, MaxOutputTokens: 64_000},
		{ID: "claude-sonnet-4-5", DisplayName: "Claude Sonnet 4.5", Created: day(2025, 9, 29), ContextWindow: 200_000, MaxOutputTokens: 64_000},
		{ID: "claude-opus-4-5", DisplayName: "Claude Opus 4.5", Created: day(2025, 11, 24), ContextWindow: 200_000, MaxOutputTokens: 64_000},
	}
}}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// Builtin returns the offline table, newest first.
func Builtin() []Model { return sortNewest(slices.Clone(builtin.Get())) }

// family extracts the line from an id such as claude-opus-5-5 or claude-3-5-sonnet-20241022.
func family(id string) string {
	if !strings.HasPrefix(id, "claude-") {
		return ""
	}
	for _, part := range strings.Split(strings.TrimPrefix(id, "claude-"), "-") {
		switch part {
		case "opus", "sonnet", "haiku", "fable", "mythos":
			return part
		}
	}
	return ""
}

// version reads the numbers of an id (claude-opus-5-5 → [5 5], claude-opus-5-5-20261001 →
// [5 5 20261001]) to order models the API gave no dates for.
func version(id string) []int {
	var out []int
	for _, part := range strings.Split(id, "-") {
		if n, err := strconv.Atoi(part); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// newer reports whether a is a later release than b.
func newer(a, b Model) bool {
	if !a.Created.IsZero() && !b.Created.IsZero() && !a.Created.Equal(b.Created) {
		return a.Created.After(b.Created)
	}
	return slices.Compare(version(a.ID), version(b.ID)) > 0
}

func sortNewest(ms []Model) []Model {
	slices.SortStableFunc(ms, func(a, b Model) int {
		switch {
		case newer(a, b):
			return -1
		case newer(b, a):
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return ms
}
