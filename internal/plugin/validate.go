package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/skill"
)

// Report is what [Validate] found in one plugin or marketplace.
type Report struct {
	// Kind is "plugin" or "marketplace"; Path what was checked.
	Kind string
	Path string
	// Problems are errors and warnings, each with file, line and what was expected.
	Problems []Error
	// Plugins are the reports of a marketplace's plugins that live in its folder.
	Plugins []Report
}

// OK reports whether nothing of severity error was found, here or in the plugins checked.
func (r Report) OK() bool {
	for _, p := range r.Problems {
		if p.Severity == SeverityError {
			return false
		}
	}
	for _, sub := range r.Plugins {
		if !sub.OK() {
			return false
		}
	}
	return true
}

// Validate checks a plugin or a marketplace as `claude plugin validate` does: path is a plugin
// folder, a marketplace folder, or a plugin.json or marketplace.json file. A folder that is
// both (a plugin at its marketplace's root) is checked as both. Every problem names its file,
// its line and the valid options.
func Validate(ctx context.Context, path string) ([]Report, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("validate %s: %w", path, err)
	}
	if !st.IsDir() {
		switch filepath.Base(abs) {
		case "marketplace.json":
			return []Report{validateMarketplace(ctx, abs)}, nil
		case "plugin.json":
			return []Report{validatePlugin(ctx, marketplaceRoot(abs), nil)}, nil
		}
		return nil, fmt.Errorf("validate %s: want a plugin or marketplace folder, a plugin.json or a marketplace.json", path)
	}
	var out []Report
	if isFile(filepath.Join(abs, MarketplacePath)) {
		out = append(out, validateMarketplace(ctx, filepath.Join(abs, MarketplacePath)))
	}
	if isFile(filepath.Join(abs, ManifestPath)) || len(out) == 0 {
		out = append(out, validatePlugin(ctx, abs, nil))
	}
	return out, nil
}

func validateMarketplace(ctx context.Context, file string) Report {
	r := Report{Kind: "marketplace", Path: file}
	data, err := os.ReadFile(file)
	if err != nil {
		r.Problems = append(r.Problems, Error{Type: ErrManifest, Severity: SeverityError, File: file, Message: err.Error()})
		return r
	}
	m := ParseMarketplace(file, data)
	r.Problems = m.Errors
	for _, e := range m.Entries {
		root := filepath.Join(m.Root, filepath.FromSlash(e.Source.Path))
		local := e.Source.Type == SourcePath && strings.HasPrefix(e.Source.Path, "./")
		line := m.ix.line(pointer("plugins", e.index, "source"))
		switch {
		case local && !isInside(m.Root, root):
			r.Problems = append(r.Problems, Error{Plugin: e.Name, Type: ErrManifest, Severity: SeverityError, File: file,
				Line: line, Message: fmt.Sprintf("plugin %s: source %q leaves the marketplace's folder", e.Name, e.Source.Path)})
		case local && !isDir(root):
			r.Problems = append(r.Problems, Error{Plugin: e.Name, Type: ErrPathNotFound, Severity: SeverityError, File: file,
				Line: line, Message: fmt.Sprintf("plugin %s: source %q does not exist (%s)", e.Name, e.Source.Path, root)})
		case local && filepath.Clean(root) != filepath.Clean(m.Root):
			// Loading the plugin with its entry reports the entry's keys too.
			r.Plugins = append(r.Plugins, validatePlugin(ctx, root, e))
			continue
		}
		pr := &problems{plugin: e.Name + "@" + m.Name}
		if d := e.doc(pr); d != nil {
			parseManifest(pr, d, true)
		}
		r.Problems = append(r.Problems, pr.list...)
	}
	return r
}

// validatePlugin loads the plugin and then reads every component the way a session would,
// collecting what each reader reports.
func validatePlugin(ctx context.Context, root string, e *Entry) Report {
	spec := Spec{Root: root, Entry: e}
	if e != nil {
		spec.Name, spec.Marketplace = e.Name, e.m.Name
	}
	p := Load(spec)
	r := Report{Kind: "plugin", Path: root, Problems: p.Errors}
	add := func(file string, line int, sev Severity, typ, msg string) {
		r.Problems = append(r.Problems, Error{Plugin: p.ID, Type: typ, Severity: sev, File: file, Line: line, Message: msg})
	}
	if !p.HasManifest && e == nil {
		add(filepath.Join(root, ManifestPath), 0, SeverityWarning, ErrManifest,
			"no manifest: the plugin loads from the default layout and is named after its folder ("+p.Name+")")
	}
	set := &Set{Plugins: []*Plugin{p}}
	defs, err := agentdef.Load(ctx, agentdef.Options{Plugins: set.AgentSources()})
	if err == nil {
		for _, d := range defs.Diagnostics() {
			add(d.Path, d.Line, Severity(d.Severity), ErrComponent, "agent: "+d.Message)
		}
	}
	_, probs := skill.Load(skill.Options{Cwd: root, ProjectRoot: root, NoBundled: true, NoProject: true, Plugins: set.SkillSources()})
	for _, pb := range probs {
		sev := SeverityWarning
		if pb.Skipped {
			sev = SeverityError
		}
		add(pb.Path, pb.Line, sev, ErrComponent, pb.Msg)
	}
	_, hookProblems := hooks.New(hooks.Config{Hooks: p.Hooks})
	for _, pb := range hookProblems {
		add(pb.Path, pb.Line, SeverityWarning, ErrHookLoad, pb.Msg)
	}
	_, mcpErrs := p.MCPServers(nil)
	r.Problems = append(r.Problems, mcpErrs...)
	return r
}

// WriteText prints reports as `keel plugin validate` shows them: each problem as
// "file:line: message", then a verdict.
func WriteText(w io.Writer, reports []Report) {
	var errs, warns int
	var walk func(r Report, indent string)
	walk = func(r Report, indent string) {
		fmt.Fprintf(w, "%sValidating %s: %s\n", indent, r.Kind, r.Path)
		for _, p := range r.Problems {
			mark := "warning"
			if p.Severity == SeverityError {
				mark, errs = "error", errs+1
			} else {
				warns++
			}
			fmt.Fprintf(w, "%s  %s: %s\n", indent, mark, p.Error())
		}
		for _, sub := range r.Plugins {
			walk(sub, indent+"  ")
		}
	}
	for _, r := range reports {
		walk(r, "")
	}
	verdict := "Validation passed"
	if errs > 0 {
		verdict = "Validation failed"
	}
	parts := []string{plural(errs, "error"), plural(warns, "warning")}
	fmt.Fprintf(w, "%s (%s)\n", verdict, strings.Join(parts, ", "))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
