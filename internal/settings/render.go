package settings

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
)

// items lists every merged value in table order, then unknown keys sorted.
func (s *Settings) items() (known, unknown []shown) {
	for _, k := range keyTable.Get() {
		known = append(known, k.show(s, k.name)...)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Unknown)) {
		v := s.Unknown[k]
		unknown = append(unknown, shown{key: k, value: v.V, from: v.From})
	}
	return known, unknown
}

// RenderText writes the sources, the merged settings with the origin of each value, and the
// problems, for `keel config`.
func (s *Settings) RenderText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "# sources, highest priority first")
	for _, f := range s.Files {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Scope, f.Path, f.State)
	}
	known, unknown := s.items()
	fmt.Fprintln(tw, "\n# settings")
	writeItems(tw, known)
	if len(unknown) > 0 {
		fmt.Fprintln(tw, "\n# keys keel does not use (kept)")
		writeItems(tw, unknown)
	}
	if len(s.Ignored) > 0 {
		fmt.Fprintln(tw, "\n# ignored: the workspace is not trusted (keel trust, or --trust)")
		for _, v := range s.Ignored {
			fmt.Fprintf(tw, "%s\t%s\n", v.V, v.From)
		}
	}
	if len(s.Problems) > 0 {
		fmt.Fprintln(tw, "\n# problems")
		for _, p := range s.Problems {
			fmt.Fprintf(tw, "%s: %s\n", p.Severity, p.Error())
		}
	}
	return tw.Flush()
}

func writeItems(w io.Writer, items []shown) {
	for _, it := range items {
		v, err := json.Marshal(it.value)
		if err != nil {
			v = []byte(fmt.Sprintf("%v", it.value))
		}
		key := it.key
		if it.list {
			key += "[]"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", key, v, it.from)
	}
}

// jsonValue is one value with its origin in the JSON rendering.
type jsonValue struct {
	Value any `json:"value"`
	Origin
}

type jsonProblem struct {
	Severity Severity `json:"severity"`
	Path     string   `json:"file"`
	Line     int      `json:"line,omitempty"`
	Col      int      `json:"column,omitempty"`
	Msg      string   `json:"message"`
}

// RenderJSON writes the same as [Settings.RenderText] as one JSON object: "sources",
// "settings" (the settings' own shape, each leaf a {"value", "scope", "file", "line"} object and
// each list a list of them), "unknown" (by dotted key), "problems", and "ignored" (the keys
// an untrusted workspace's files could not set) when there are any.
func (s *Settings) RenderJSON(w io.Writer) error {
	known, unknown := s.items()
	tree := settingsTree(known, func(it shown) jsonValue { return jsonValue{Value: it.value, Origin: it.from} })
	unk := map[string]jsonValue{}
	for _, it := range unknown {
		unk[it.key] = jsonValue{Value: it.value, Origin: it.from}
	}
	problems := []jsonProblem{}
	for _, p := range s.Problems {
		problems = append(problems, jsonProblem(p))
	}
	files := s.Files
	if files == nil {
		files = []FileStatus{}
	}
	out := map[string]any{
		"sources":  files,
		"settings": tree,
		"unknown":  unk,
		"problems": problems,
	}
	if len(s.Ignored) > 0 {
		var ignored []jsonValue
		for _, v := range s.Ignored {
			ignored = append(ignored, jsonValue{Value: v.V, Origin: v.From})
		}
		out["ignored"] = ignored
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
