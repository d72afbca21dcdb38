package memory

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Report is what `keel memory --json` prints: the files in load order, the path-scoped rules
// still waiting for a matching file, and the warnings.
type Report struct {
	Root     string       `json:"root"`
	Files    []ReportFile `json:"files"`
	Pending  []ReportFile `json:"pending"`
	Warnings []Warning    `json:"warnings"`
	// Excluded are the files left out because a Read rule or the sandbox's masks cover them.
	Excluded []Excluded `json:"excluded"`
	// Chars is the total size of the loaded files, in characters.
	Chars int `json:"chars"`
}

// ReportFile is one file of a [Report]: a [File] without its content, plus its length.
type ReportFile struct {
	File
	Chars int `json:"chars"`
}

// NewReport summarises a Set.
func NewReport(s *Set) Report {
	r := Report{Root: s.Root, Files: []ReportFile{}, Pending: []ReportFile{}, Warnings: s.Warnings()}
	if r.Warnings == nil {
		r.Warnings = []Warning{}
	}
	r.Excluded = s.Excluded()
	if r.Excluded == nil {
		r.Excluded = []Excluded{}
	}
	for _, f := range s.Files() {
		n := utf8.RuneCountInString(f.Content)
		r.Chars += n
		r.Files = append(r.Files, ReportFile{File: f, Chars: n})
	}
	for _, f := range s.Pending() {
		r.Pending = append(r.Pending, ReportFile{File: f, Chars: utf8.RuneCountInString(f.Content)})
	}
	return r
}

// WriteJSON prints the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write memory report: %w", err)
	}
	return nil
}

// WriteText prints the report for people: one line per file in load order, with its kind,
// size and the chain of files that included it.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if len(r.Files) == 0 {
		b.WriteString("No memory files loaded.\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for i, f := range r.Files {
		fmt.Fprintf(tw, "%3d\t%s\t%s\t%s", i+1, label(f.File), f.Display, size(f.Size))
		if f.Truncated {
			tw.Write([]byte(" (truncated)"))
		}
		if len(f.Chain) > 0 {
			fmt.Fprintf(tw, "\tvia %s", strings.Join(f.Chain, " → "))
		}
		tw.Write([]byte("\n"))
	}
	tw.Flush()
	if len(r.Files) > 0 {
		fmt.Fprintf(&b, "total %d characters in %d files\n", r.Chars, len(r.Files))
	}
	if len(r.Pending) > 0 {
		b.WriteString("\nRules waiting for a matching file:\n")
		for _, f := range r.Pending {
			fmt.Fprintf(&b, "     %-8s %s  paths: %s\n", label(f.File), f.Display, strings.Join(f.Globs, ", "))
		}
	}
	if len(r.Excluded) > 0 {
		b.WriteString("\nExcluded (not read into the prompt):\n")
		for _, e := range r.Excluded {
			fmt.Fprintf(&b, "     %s\n", e)
		}
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\nWarnings:\n")
		for _, wn := range r.Warnings {
			fmt.Fprintf(&b, "  %s\n", wn)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write memory report: %w", err)
	}
	return nil
}

func label(f File) string {
	if f.Rule {
		return string(f.Kind) + "/rule"
	}
	return string(f.Kind)
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
