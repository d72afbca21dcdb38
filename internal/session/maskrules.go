package session

import (
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/sandbox"
)

// denyReadSource and keelHomeSource name, in a mask rule's source, what it stands for.
const (
	denyReadSource = "sandbox.filesystem.denyRead"
	keelHomeSource = "keel's own credentials and file copies"
)

// maskRules are the Read deny rules that keel's masked folders and sandbox.filesystem.denyRead stand for
// ([permission.MaskRule]), allowRead left readable within them as the sandbox does: the
// sandbox hides those paths from commands, and without these the model's own Read, Grep and
// Glob — which run outside it — would read them with no question asked. With the sandbox off
// too: the settings still say the files are to be hidden.
func (s *Session) maskRules() ([]permission.Rule, []event.Notice) {
	var rules []permission.Rule
	// keel's own credentials and copies of files, which the sandbox masks from commands
	// whatever the settings say, are not the model's to read either.
	for _, path := range sandbox.KeelHomeMasked(s.opts.Home) {
		r, err := permission.MaskRule(path, nil, keelHomeSource, permission.Source{Name: keelHomeSource})
		if err != nil {
			return nil, []event.Notice{{Level: "error", Text: err.Error()}}
		}
		rules = append(rules, r)
	}
	fs := s.settings.Sandbox.Filesystem
	if len(fs.DenyRead) == 0 {
		return rules, nil
	}
	home := userHome()
	var unless []string
	for _, a := range fs.AllowRead {
		if p := sandbox.SettingsPath(a.V, s.opts.Cwd, home); p != "" {
			unless = append(unless, p)
		}
	}
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
