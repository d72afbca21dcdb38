package skill

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// RenderText writes the table `keel skills` prints: every entry with its kind, source and
// how it can be invoked, then the problems found while loading.
func RenderText(w io.Writer, skills []Skill, problems []Problem) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSOURCE\tRUNS\tINVOKED BY\tDESCRIPTION")
	for _, s := range skills {
		source := string(s.Source)
		if s.Plugin != "" {
			source += " (" + s.Plugin + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, source, runs(s), invokedBy(s),
			truncate(oneLine(s.Description), 60))
	}
	if len(skills) == 0 {
		fmt.Fprintln(tw, "(no skills or commands)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(problems) > 0 {
		fmt.Fprintln(w, "\nproblems:")
		for _, p := range problems {
			what := "warning"
			if p.Skipped {
				what = "skipped"
			}
			fmt.Fprintf(w, "  %s: %s\n", what, p.Error())
		}
	}
	return nil
}

func runs(s Skill) string {
	if s.Context == ContextFork {
		return "fork:" + firstNonEmpty(s.Agent, DefaultAgent)
	}
	return "inline"
}

func invokedBy(s Skill) string {
	var by []string
	if s.UserInvocable {
		by = append(by, "user")
	}
	if s.ModelInvocable() {
		by = append(by, "model")
	}
	if len(by) == 0 {
		return "-"
	}
	return strings.Join(by, ",")
}

// jsonSkill is the JSON shape of one entry; field names follow the frontmatter keys.
type jsonSkill struct {
	Name           string         `json:"name"`
	Kind           Kind           `json:"kind"`
	Source         Source         `json:"source"`
	Plugin         string         `json:"plugin,omitempty"`
	Path           string         `json:"path"`
	Description    string         `json:"description"`
	ArgumentHint   string         `json:"argumentHint,omitempty"`
	Context        Context        `json:"context"`
	Agent          string         `json:"agent,omitempty"`
	Model          string         `json:"model,omitempty"`
	AllowedTools   []string       `json:"allowedTools,omitempty"`
	UserInvocable  bool           `json:"userInvocable"`
	ModelInvocable bool           `json:"modelInvocable"`
	Overrides      []string       `json:"overrides,omitempty"`
	Extra          map[string]any `json:"extra,omitempty"`
}

type jsonProblem struct {
	Path    string `json:"path"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
	Skipped bool   `json:"skipped"`
}

// RenderJSON writes `keel skills --json`: {"skills": [...], "problems": [...]}.
func RenderJSON(w io.Writer, skills []Skill, problems []Problem) error {
	doc := struct {
		Skills   []jsonSkill   `json:"skills"`
		Problems []jsonProblem `json:"problems"`
	}{Skills: []jsonSkill{}, Problems: []jsonProblem{}}
	for _, s := range skills {
		doc.Skills = append(doc.Skills, jsonSkill{
			Name: s.Name, Kind: s.Kind, Source: s.Source, Plugin: s.Plugin, Path: s.Path, Description: s.Description,
			ArgumentHint: s.ArgumentHint, Context: s.Context, Agent: s.Agent, Model: s.Model,
			AllowedTools: s.AllowedTools, UserInvocable: s.UserInvocable, ModelInvocable: s.ModelInvocable(),
			Overrides: s.Overrides, Extra: s.Extra,
		})
	}
	for _, p := range problems {
		doc.Problems = append(doc.Problems, jsonProblem{Path: p.Path, Line: p.Line, Message: p.Msg, Skipped: p.Skipped})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}
