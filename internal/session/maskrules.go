package session

import (
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/sandbox"
)

// denyReadSource names, in a mask rule's source, the setting it stands for.
const denyReadSource = "sandbox.filesystem.denyRead"

// maskRules are the Read deny rules that sandbox.filesystem.denyRead stands for
// ([permission.MaskRule]), allowRead left readable within them as the sandbox does: the
// sandbox hides those paths from commands, and without these the model's own Read, Grep and
// Glob — which run outside it — would read them with no question asked. With the sandbox off
// too: the settings still say the files are to be hidden.
func (s *Session) maskRules() ([]permission.Rule, []event.Notice) {
	fs := s.settings.Sandbox.Filesystem
	if len(fs.DenyRead) == 0 {
		return nil, nil
	}
	home := userHome()
	var unless []string
	for _, a := range fs.AllowRead {
		if p := sandbox.SettingsPath(a.V, s.opts.Cwd, home); p != "" {
			unless = append(unless, p)
		}
	}
	var rules []permission.Rule
	var problems []event.Notice
	for _, d := range fs.DenyRead {
		path := sandbox.SettingsPath(d.V, s.opts.Cwd, home)
		if path == "" {
			continue
		}
		src := permission.Source{Name: denyReadSource + " of " + string(d.From.Scope), Path: d.From.Path, Line: d.From.Line, Col: d.From.Col}
		r, err := permission.MaskRule(path, unless, denyReadSource, src)
		if err != nil {
			problems = append(problems, event.Notice{Level: "error", Text: err.Error()})
			continue
		}
		rules = append(rules, r)
	}
	return rules, problems
}
