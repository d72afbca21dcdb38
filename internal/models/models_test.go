package models

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestResolveBuiltin(t *testing.T) {
	c := Builtins()
	tests := []struct{ in, want string }{
		{"", "claude-opus-5-5"},
		{"default", "claude-opus-5-5"},
		{"opus", "claude-opus-5-5"},
		{"sonnet", "claude-sonnet-5-5"},
		{"haiku", "claude-haiku-5-5"},
		{"fable", "claude-fable-5-2"},
		{"best", "claude-fable-5-2"},
		{"opusplan", "claude-sonnet-5-5"},
		{"sonnet[1m]", "claude-sonnet-5-5"},
		{"opus[1m]", "claude-opus-5-5"},
		{"claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"claude-opus-4-8[1m]", "claude-opus-4-8"},
		{"gpt-4.1", "gpt-4.1"},
		{"qwen2.5-coder", "qwen2.5-coder"},
		{"inherit", "inherit"},
	}
	for _, tt := range tests {
		if got := c.Resolve(tt.in); got != tt.want {
			t.Errorf("Resolve(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if c.Resolve("") != DefaultModel {
		t.Errorf("the default alias and DefaultModel disagree")
	}
}

type lister struct {
	models []Model
	err    error
	calls  int
}

func (l *lister) ListModels(context.Context) ([]Model, error) {
	l.calls++
	return l.models, l.err
}

// TestNewerReleaseResolves: a model the API lists that keel's table does not know becomes
// what its family's alias means, from the cached list, in a later process too.
func TestNewerReleaseResolves(t *testing.T) {
	home, base := t.TempDir(), "https://api.example.test"
	now := time.Date(2027, 1, 10, 12, 0, 0, 0, time.UTC)
	c := Load(home, base)
	if !c.Stale(now) {
		t.Fatal("a catalog never fetched is not stale")
	}
	l := &lister{models: []Model{
		{ID: "claude-opus-5-7", DisplayName: "Claude Opus 5.7", Created: day(2027, 1, 5), ContextWindow: 2_000_000, MaxOutputTokens: 256_000},
		{ID: "claude-sonnet-5-5-20260928", Created: day(2026, 9, 28)},
		{ID: "claude-sonnet-5-5", Created: day(2026, 9, 28)},
	}}
	if err := c.Refresh(t.Context(), l, base, now); err != nil {
		t.Fatal(err)
	}
	again := Load(home, base)
	if got := again.Resolve("opus"); got != "claude-opus-5-7" {
		t.Errorf("opus = %q, want the newer release from the cached list", got)
	}
	if got := again.Resolve("sonnet"); got != "claude-sonnet-5-5" {
		t.Errorf("sonnet = %q, want the undated id over its snapshot", got)
	}
	if got := again.ContextWindow("claude-opus-5-7"); got != 2_000_000 {
		t.Errorf("context window of the new model = %d, want the API's figure", got)
	}
	if got := again.ContextWindow("claude-sonnet-5-5-20260928"); got != 1_000_000 {
		t.Errorf("a snapshot's window = %d, want its model's (the table fills in what the API left out)", got)
	}
	if again.Stale(now.Add(23*time.Hour)) || !again.Stale(now.Add(25*time.Hour)) {
		t.Error("the list is not fresh for a day")
	}
	if other := Load(home, "http://127.0.0.1:9"); other.Resolve("opus") != "claude-opus-5-5" {
		t.Error("another endpoint's list leaked into this one's catalog")
	}
}

// TestFailedRefreshKeepsTheList: an unreachable API leaves the last list and the table in
// place, and is not asked again within the hour.
func TestFailedRefreshKeepsTheList(t *testing.T) {
	home, base := t.TempDir(), "https://api.example.test"
	now := time.Date(2027, 1, 10, 12, 0, 0, 0, time.UTC)
	c := Load(home, base)
	_ = c.Refresh(t.Context(), &lister{models: []Model{{ID: "claude-haiku-5-7", Created: day(2027, 1, 1)}}}, base, now)
	later := now.Add(30 * time.Hour)
	c = Load(home, base)
	if err := c.Refresh(t.Context(), &lister{err: errors.New("offline")}, base, later); err == nil {
		t.Fatal("a failed refresh reported no error")
	}
	c = Load(home, base)
	if got := c.Resolve("haiku"); got != "claude-haiku-5-7" {
		t.Errorf("haiku = %q after a failed refresh, want the last list's", got)
	}
	if c.Stale(later.Add(30*time.Minute)) || !c.Stale(later.Add(61*time.Minute)) {
		t.Error("a failed attempt is retried within the hour, or never")
	}
}

func TestOverridesAndLookup(t *testing.T) {
	c := Builtins().WithOverrides(map[string]string{"haiku": "claude-haiku-4-5", "opus": ""})
	if got := c.Resolve("haiku"); got != "claude-haiku-4-5" {
		t.Errorf("haiku = %q, want the override", got)
	}
	if got := c.Resolve("opus"); got != "claude-opus-5-5" {
		t.Errorf("an empty override changed opus to %q", got)
	}
	m, ok := c.Lookup("claude-haiku-4-5-20251001")
	if !ok || m.ContextWindow != 200_000 || m.ID != "claude-haiku-4-5-20251001" {
		t.Errorf("Lookup(snapshot) = %+v, %v", m, ok)
	}
	if _, ok := c.Lookup("gpt-4.1"); ok || c.ContextWindow("gpt-4.1") != DefaultContextWindow {
		t.Error("an unknown model has a window other than the default")
	}
	var fams []string
	for _, m := range Builtin() {
		fams = append(fams, m.Family())
	}
	if diff := cmp.Diff([]string{"fable", "haiku", "sonnet", "opus", "fable", "opus", "sonnet", "fable", "opus", "haiku", "sonnet"}, fams); diff != "" {
		t.Errorf("built-in table order (-want +got):\n%s", diff)
	}
}
