package models

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// Refresh intervals: a list older than MaxAge is fetched again, but not more often than
// RetryAfter when fetching fails (offline, a gateway without the endpoint), so an
// unreachable API costs one attempt an hour, not one a run.
const (
	MaxAge     = 24 * time.Hour
	RetryAfter = time.Hour
)

// Lister lists the models an API key can use (the Messages API's GET /v1/models).
type Lister interface {
	ListModels(ctx context.Context) ([]Model, error)
}

// Catalog is the models keel can name: the last list fetched from the API for one endpoint,
// then the built-in table for whatever that list does not hold. Aliases resolve to the
// newest model of their family in it. A Catalog is read-only after Load and Refresh, and safe
// for concurrent reads.
type Catalog struct {
	models []Model
	// listed is the list as the API gave it (nil when never fetched).
	listed []Model
	// fetched is the time of the list's fetch, checked of the last attempt; zero when never.
	fetched, checked time.Time
	// Overrides pin an alias's family to a model id (ANTHROPIC_DEFAULT_OPUS_MODEL …).
	overrides map[string]string
	path      string
}

// cacheFile is the cached list's shape on disk.
type cacheFile struct {
	BaseURL   string    `json:"base_url"`
	FetchedAt time.Time `json:"fetched_at,omitzero"`
	CheckedAt time.Time `json:"checked_at,omitzero"`
	Models    []Model   `json:"models,omitempty"`
}

// Load returns the catalog for the API at baseURL: the list cached under home (any age; see
// [Catalog.Stale]) over the built-in table. An empty home keeps nothing on disk; a missing or
// unreadable cache is no error — the built-in table stands.
func Load(home, baseURL string) *Catalog {
	c := &Catalog{}
	if home != "" {
		sum := sha256.Sum256([]byte(baseURL))
		c.path = filepath.Join(home, "cache", "models-"+hex.EncodeToString(sum[:6])+".json")
		if data, err := os.ReadFile(c.path); err == nil {
			var f cacheFile
			if json.Unmarshal(data, &f) == nil && f.BaseURL == baseURL {
				c.fetched, c.checked = f.FetchedAt, f.CheckedAt
				c.models, c.listed = f.Models, f.Models
			}
		}
	}
	c.models = merge(c.models, builtin.Get())
	return c
}

// Builtins returns a catalog of the built-in table only.
func Builtins() *Catalog { return &Catalog{models: merge(nil, builtin.Get())} }

// merge lists fetched models, then the built-in ones the list lacks, newest first.
func merge(fetched, table []Model) []Model {
	out := slices.Clone(fetched)
	for _, b := range table {
		i := slices.IndexFunc(out, func(m Model) bool { return m.ID == b.ID })
		if i < 0 {
			out = append(out, b)
			continue
		}
		// The API's entry wins; the table fills in what it left out.
		if out[i].ContextWindow == 0 {
			out[i].ContextWindow = b.ContextWindow
		}
		if out[i].MaxOutputTokens == 0 {
			out[i].MaxOutputTokens = b.MaxOutputTokens
		}
		if out[i].DisplayName == "" {
			out[i].DisplayName = b.DisplayName
		}
	}
	return sortNewest(out)
}

// WithOverrides returns the catalog with families pinned to model ids, as Claude Code's
// ANTHROPIC_DEFAULT_OPUS_MODEL, …_SONNET_…, …_HAIKU_… (and keel's …_FABLE_…) do.
func (c *Catalog) WithOverrides(byFamily map[string]string) *Catalog {
	out := *c
	out.overrides = map[string]string{}
	for f, id := range byFamily {
		if id != "" {
			out.overrides[f] = id
		}
	}
	return &out
}

// Fetched is when the list from the API was fetched; zero when it never was.
func (c *Catalog) Fetched() time.Time { return c.fetched }

// Stale reports whether the list should be fetched again: it is older than [MaxAge] (or
// missing) and the last attempt is older than [RetryAfter].
func (c *Catalog) Stale(now time.Time) bool {
	return now.Sub(c.fetched) >= MaxAge && now.Sub(c.checked) >= RetryAfter
}

// Refresh fetches the list from the API and caches it; on failure the catalog is unchanged
// and the attempt is remembered, so it is not repeated within [RetryAfter].
func (c *Catalog) Refresh(ctx context.Context, l Lister, baseURL string, now time.Time) error {
	list, err := l.ListModels(ctx)
	f := cacheFile{BaseURL: baseURL, CheckedAt: now}
	if err != nil {
		c.checked = now
		f.FetchedAt, f.Models = c.fetched, c.listed
		_ = c.save(f) // the attempt's record is best effort; the error that matters is err
		return err
	}
	c.fetched, c.checked = now, now
	c.models, c.listed = merge(list, builtin.Get()), list
	f.FetchedAt, f.Models = now, list
	return c.save(f)
}

func (c *Catalog) save(f cacheFile) error {
	if c.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("cache the model list: %w", err)
	}
	if err := atomicfile.WriteFile(c.path, data, 0o600); err != nil {
		return fmt.Errorf("cache the model list: %w", err)
	}
	return nil
}

// Models lists the catalog, newest first.
func (c *Catalog) Models() []Model { return slices.Clone(c.models) }

// Listed is the list the API gave at the last successful fetch, newest first, its entries
// completed from the built-in table; nil when it was never fetched.
func (c *Catalog) Listed() []Model {
	if c.listed == nil {
		return nil
	}
	var out []Model
	for _, l := range c.listed {
		m, _ := c.Lookup(l.ID)
		out = append(out, m)
	}
	return sortNewest(out)
}

// AliasesOf lists the aliases that resolve to id.
func (c *Catalog) AliasesOf(id string) []string {
	var out []string
	for _, a := range Aliases {
		if a != "opusplan" && c.Resolve(a) == id {
			out = append(out, a)
		}
	}
	return out
}

// Lookup finds a model by id; a dated snapshot (claude-opus-5-5-20261001) or a name with
// "[1m]" finds the model it is a version of.
func (c *Catalog) Lookup(id string) (Model, bool) {
	id = strings.TrimSuffix(id, "[1m]")
	exact := slices.IndexFunc(c.models, func(m Model) bool { return m.ID == id })
	base := -1
	for i, m := range c.models {
		if strings.HasPrefix(id, m.ID+"-") && (base < 0 || len(m.ID) > len(c.models[base].ID)) {
			base = i
		}
	}
	switch {
	case exact < 0 && base < 0:
		return Model{}, false
	case exact < 0:
		m := c.models[base]
		m.ID = id
		return m, true
	}
	m := c.models[exact]
	if base >= 0 { // a snapshot the API listed without its limits: its model's apply
		b := c.models[base]
		m.ContextWindow = cmp.Or(m.ContextWindow, b.ContextWindow)
		m.MaxOutputTokens = cmp.Or(m.MaxOutputTokens, b.MaxOutputTokens)
		m.DisplayName = cmp.Or(m.DisplayName, b.DisplayName)
	}
	return m, true
}

// ContextWindow is the model's context window, or [DefaultContextWindow] when unknown.
func (c *Catalog) ContextWindow(id string) int64 {
	if m, ok := c.Lookup(id); ok && m.ContextWindow > 0 {
		return m.ContextWindow
	}
	return DefaultContextWindow
}

// IsAlias reports whether name is an alias [Catalog.Resolve] turns into a model id.
func IsAlias(name string) bool {
	return slices.Contains(Aliases, strings.TrimSuffix(name, "[1m]"))
}

// Resolve turns an alias into the id of the newest model of its family in the catalog; an
// empty name is the default. Anything else — a full id, a local server's model name — passes
// unchanged, but for a trailing "[1m]", which no API takes as part of an id. opusplan (opus
// while planning, sonnet otherwise, in Claude Code) resolves to the sonnet it executes with.
func (c *Catalog) Resolve(name string) string {
	alias := strings.TrimSuffix(name, "[1m]")
	switch alias {
	case "", "default":
		alias = DefaultAlias
	case "best":
		alias = bestAlias
	case "opusplan":
		alias = "sonnet"
	}
	if !slices.Contains(Families, alias) {
		if strings.HasPrefix(name, "claude-") {
			return alias
		}
		return name
	}
	if id, ok := c.overrides[alias]; ok {
		return id
	}
	for _, m := range c.models { // newest first
		if m.Family() != alias {
			continue
		}
		// A dated snapshot resolves to its undated id when the list has that too.
		if base, ok := snapshotBase(m.ID); ok && slices.ContainsFunc(c.models, func(o Model) bool { return o.ID == base }) {
			return base
		}
		return m.ID
	}
	return name
}

// snapshotBase returns the undated id of a dated snapshot (claude-opus-4-5-20251101 →
// claude-opus-4-5).
func snapshotBase(id string) (string, bool) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 || len(id)-i-1 != 8 {
		return "", false
	}
	for _, r := range id[i+1:] {
		if r < '0' || r > '9' {
			return "", false
		}
	}
	return id[:i], true
}
