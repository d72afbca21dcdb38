package agentdef

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// Listing is what `keel agents` shows: every definition (active or overridden) and every
// problem found while loading.
type Listing struct {
	Agents      []Entry      `json:"agents"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// Entry is one definition in a [Listing].
type Entry struct {
	*Definition
	// Active is false for a definition that a higher-precedence one of the same name replaces.
	Active bool `json:"active"`
	// Overrides lists, for an active definition, the definitions of the same name it replaces,
	// highest precedence first.
	Overrides []Ref `json:"overrides,omitempty"`
	// OverriddenBy names, for an inactive definition, the one that replaces it.
	OverriddenBy *Ref `json:"overriddenBy,omitempty"`
}

// Ref points at one definition: its source and file.
type Ref struct {
	Source Source `json:"source"`
	Plugin string `json:"plugin,omitempty"`
	Format Format `json:"format"`
	Path   string `json:"path,omitempty"`
}

func refOf(d *Definition) Ref {
	return Ref{Source: d.Source, Plugin: d.Plugin, Format: d.Format, Path: d.Path}
}

// sourceLabel is a definition's source as shown: "plugin (feature-dev)", "user (codex)".
func sourceLabel(source Source, plugin string, format Format) string {
	s := string(source)
	if plugin != "" {
		s += " (" + plugin + ")"
	}
	if format != FormatKeel {
		s += " (" + string(format) + ")"
	}
	return s
}

// List returns every definition with what it overrides or is overridden by, in the order of
// [Set.Agents], each active definition followed by the ones it replaces.
func (s *Set) List() Listing {
	l := Listing{Agents: []Entry{}, Diagnostics: s.Diagnostics()}
	if l.Diagnostics == nil {
		l.Diagnostics = []Diagnostic{}
	}
	s.mu.RLock()
	all := s.defs
	s.mu.RUnlock()
	for _, win := range s.Agents() {
		var losers []*Definition
		for _, d := range all {
			if d.Name == win.Name && d != win {
				losers = append(losers, d)
			}
		}
		slices.Reverse(losers)
		e := Entry{Definition: win, Active: true}
		for _, d := range losers {
			e.Overrides = append(e.Overrides, refOf(d))
		}
		l.Agents = append(l.Agents, e)
		winner := refOf(win)
		for _, d := range losers {
			l.Agents = append(l.Agents, Entry{Definition: d, OverriddenBy: &winner})
		}
	}
	return l
}

// WriteJSON writes the listing as indented JSON, paths as loaded.
func (l Listing) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(l)
}

// WriteText writes the listing as a table followed by the problems. Paths under projectDir are
// shown relative to it and paths under homeDir with "~"; either may be empty.
func (l Listing) WriteText(w io.Writer, projectDir, homeDir string) error {
	short := func(p string) string { return shortPath(p, projectDir, homeDir) }
	where := func(r Ref) string {
		s := sourceLabel(r.Source, r.Plugin, r.Format)
		if r.Path != "" {
			s += " " + short(r.Path)
		}
		return s
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tFILE\tNOTES")
	active := 0
	for _, e := range l.Agents {
		var notes []string
		if e.Active {
			active++
			if e.OneShot {
				notes = append(notes, "one-shot")
			}
			for _, o := range e.Overrides {
				notes = append(notes, "overrides "+where(o))
			}
		} else {
			notes = append(notes, "overridden by "+where(*e.OverriddenBy))
		}
		source := sourceLabel(e.Source, e.Plugin, e.Format)
		file := "-"
		if e.Path != "" {
			file = short(e.Path)
		}
		name := e.Name
		if !e.Active {
			name = "  " + name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, source, file, strings.Join(notes, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d agents active, %d overridden\n", active, len(l.Agents)-active)
	if len(l.Diagnostics) > 0 {
		fmt.Fprintf(w, "\n%d problems:\n", len(l.Diagnostics))
		for _, d := range l.Diagnostics {
			d.Path = short(d.Path)
			fmt.Fprintf(w, "  %s: %s\n", d.Severity, d.Error())
		}
	}
	return nil
}

func shortPath(p, projectDir, homeDir string) string {
	if projectDir != "" {
		if rel, err := filepath.Rel(projectDir, p); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
	}
	if homeDir != "" {
		if rel, err := filepath.Rel(homeDir, p); err == nil && filepath.IsLocal(rel) {
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return p
}
