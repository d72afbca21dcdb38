package lsp

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Severities of the Language Server Protocol.
const (
	SeverityError   = 1
	SeverityWarning = 2
	SeverityInfo    = 3
	SeverityHint    = 4
)

// MaxPerFile is how many diagnostics of one file are reported; MaxTotal of one report.
const (
	MaxPerFile = 10
	MaxTotal   = 30
)

// Diagnostic is one problem a language server reported. Line and Col count from 1.
type Diagnostic struct {
	Severity  int
	Line, Col int
	Message   string
	Source    string
	Code      string
}

// key identifies a diagnostic independently of where it is: an edit above it moves it, it
// is still the same problem.
func (d Diagnostic) key() string {
	return fmt.Sprintf("%d\x00%s\x00%s\x00%s", d.Severity, d.Source, d.Code, d.Message)
}

func fromLSP(ds []lspDiagnostic) []Diagnostic {
	out := make([]Diagnostic, 0, len(ds))
	for _, d := range ds {
		sev := d.Severity
		if sev == 0 {
			sev = SeverityError // the specification leaves it to the client; errors is safest
		}
		code := ""
		if len(d.Code) > 0 && string(d.Code) != "null" {
			var s string
			if json.Unmarshal(d.Code, &s) == nil {
				code = s
			} else {
				code = string(d.Code)
			}
		}
		out = append(out, Diagnostic{Severity: sev, Line: d.Range.Start.Line + 1, Col: d.Range.Start.Character + 1,
			Message: strings.TrimSpace(d.Message), Source: d.Source, Code: code})
	}
	return out
}

// newSince returns the diagnostics of now that were not in before, counting duplicates, so a
// second copy of an existing error is new. Hints are left out: they are suggestions, not
// problems the edit caused.
func newSince(before, now []Diagnostic) []Diagnostic {
	seen := map[string]int{}
	for _, d := range before {
		seen[d.key()]++
	}
	var out []Diagnostic
	for _, d := range now {
		if d.Severity >= SeverityHint {
			continue
		}
		if seen[d.key()] > 0 {
			seen[d.key()]--
			continue
		}
		out = append(out, d)
	}
	return out
}

// FileDiagnostics are the new diagnostics of one file, most severe first, at most
// [MaxPerFile]; Omitted counts the ones left out.
type FileDiagnostics struct {
	Path        string
	Diagnostics []Diagnostic
	Omitted     int
}

func limit(path string, ds []Diagnostic) FileDiagnostics {
	ds = slices.Clone(ds)
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Severity, b.Severity), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	f := FileDiagnostics{Path: path, Diagnostics: ds}
	if len(ds) > MaxPerFile {
		f.Diagnostics, f.Omitted = ds[:MaxPerFile], len(ds)-MaxPerFile
	}
	return f
}

// Format renders new diagnostics for the model, paths relative to cwd where they are below
// it. It returns "" for none.
func Format(files []FileDiagnostics, cwd string) string {
	var b strings.Builder
	total := 0
	for _, f := range files {
		if len(f.Diagnostics) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("<new-diagnostics>\nThe language server reports new problems in the files just changed:\n")
		}
		path := f.Path
		if rel, err := filepath.Rel(cwd, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
		fmt.Fprintf(&b, "%s:\n", path)
		omitted := f.Omitted
		for i, d := range f.Diagnostics {
			if total == MaxTotal {
				omitted += len(f.Diagnostics) - i
				break
			}
			total++
			fmt.Fprintf(&b, "  %s [%d:%d] %s", severityName(d.Severity), d.Line, d.Col, d.Message)
			if src := strings.Trim(d.Source+" "+d.Code, " "); src != "" {
				fmt.Fprintf(&b, " (%s)", src)
			}
			b.WriteByte('\n')
		}
		if omitted > 0 {
			fmt.Fprintf(&b, "  … and %d more\n", omitted)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString("</new-diagnostics>")
	return b.String()
}

func severityName(s int) string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	case SeverityInfo:
		return "info"
	}
	return "hint"
}
