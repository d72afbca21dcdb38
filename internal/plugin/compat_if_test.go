package plugin

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/compattest"
	"github.com/keel-dev/keel/internal/hooks"
)

// TestCorpusConditionalHooks: security-guidance runs one script after Bash calls under five
// `if` conditions (git commit, git push, gt create/modify/submit). Each call spawns only the
// hooks whose condition it meets. The corpus leaves the script out, so each hook's command is
// replaced by one that names its condition.
func TestCorpusConditionalHooks(t *testing.T) {
	dir := compattest.Dir(t, "claude", "plugins")
	p := Load(Spec{Root: filepath.Join(dir, "anthropics__claude-plugins-official", "security-guidance")})
	groups := p.Hooks
	var conds []string
	for i := range groups {
		for j := range groups[i].Hooks {
			h := &groups[i].Hooks[j]
			if h.If != "" {
				conds = append(conds, h.If)
			}
			h.Command = "cat >/dev/null # " + h.If
		}
	}
	want := []string{"Bash(git commit:*)", "Bash(git push:*)", "Bash(gt create:*)", "Bash(gt modify:*)", "Bash(gt submit:*)"}
	if diff := cmp.Diff(want, conds); diff != "" {
		t.Fatalf("if conditions mismatch (-want +got):\n%s", diff)
	}
	work := t.TempDir()
	r, problems := hooks.New(hooks.Config{Plugins: groups, ProjectDir: work, Trusted: true})
	for _, pr := range problems {
		if strings.Contains(pr.Msg, `"if"`) {
			t.Errorf("problem with an if: %v", pr)
		}
	}
	ran := func(cmd string) []string {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		out := r.Run(t.Context(), hooks.PostToolUse, hooks.Input{Cwd: work, ToolName: "Bash", ToolInput: in})
		var got []string
		for _, res := range out.Results {
			_, c, _ := strings.Cut(res.Command, "# ")
			got = append(got, c)
		}
		return got
	}
	for cmd, want := range map[string][]string{
		"ls -la":                         nil,
		"git commit -m 'fix'":            {"Bash(git commit:*)"},
		"git add . && git push origin":   {"Bash(git push:*)"},
		"gt submit --stack":              {"Bash(gt submit:*)"},
		"git status; git commit --amend": {"Bash(git commit:*)"},
	} {
		if diff := cmp.Diff(want, ran(cmd)); diff != "" {
			t.Errorf("%s: hooks run mismatch (-want +got):\n%s", cmd, diff)
		}
	}
}
