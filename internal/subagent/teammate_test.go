package subagent

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/team"
)

// A teammate's prompt: default is the parent's whole prompt, the team addendum, the agent's
// instructions and the teammate's name last (so teammates share every byte before it);
// replace is the given prompt alone; append adds it after the default. Its tools keep
// SendMessage and drop the Agent tool; it asks through the asker it was given.
func TestPrepareTeammate(t *testing.T) {
	w := newWorld(t, &scripted.Scenario{}, worldOptions{system: "PARENT PROMPT"})
	asker := permission.AskerFunc(nil)
	for _, tc := range []struct {
		mode, prompt string
		want         []string
		not          []string
	}{
		{"", "", []string{"PARENT PROMPT", "TEAM ADDENDUM", "Your name in the team is alice."}, nil},
		{"replace", "ONLY THIS", []string{"ONLY THIS", "Your name in the team is alice."}, []string{"PARENT PROMPT", "TEAM ADDENDUM"}},
		{"append", "AND THIS", []string{"PARENT PROMPT", "TEAM ADDENDUM", "AND THIS"}, nil},
	} {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			p, err := w.runner.PrepareTeammate(t.Context(), team.Spec{ID: newID(), Name: "alice", Color: "green", Prompt: "work",
				SystemPromptMode: tc.mode, SystemPrompt: tc.prompt}, team.MemberSeams{Asker: asker, Addendum: "TEAM ADDENDUM"})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			sys := p.Agent.System(t.Context())
			var texts []string
			for _, b := range sys.Blocks {
				texts = append(texts, b.Text)
			}
			all := strings.Join(texts, "\n")
			for _, want := range tc.want {
				if !strings.Contains(all, want) {
					t.Errorf("system prompt lacks %q:\n%s", want, all)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(all, not) {
					t.Errorf("system prompt has %q:\n%s", not, all)
				}
			}
			if last := texts[len(texts)-1]; last != "Your name in the team is alice." {
				t.Errorf("the name is not the last block: %q", last)
			}
			names := strings.Join(p.Agent.Pool(t.Context()).Names(), " ")
			if !strings.Contains(names, "SendMessage") || strings.Contains(" "+names+" ", " Agent ") {
				t.Errorf("teammate tools: %s; want SendMessage and no Agent", names)
			}
			if p.Agent.Origin.AgentName != "alice" || len(p.History) != 1 || p.History[0].TextOf() != "work" {
				t.Errorf("origin %+v, history %v", p.Agent.Origin, p.History)
			}
		})
	}
}

// The Agent tool's mode enum for a teammate is the settings' permission modes but auto, as
// Claude Code's Agent tool lists them: written out in the schema's text so the tool list
// stays byte-stable, and held to the one list here.
func TestTeamSchemaModesArePermissionModes(t *testing.T) {
	var schema struct {
		Properties struct {
			Mode struct {
				Enum []string `json:"enum"`
			} `json:"mode"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(teamSchema), &schema); err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(slices.Clone(settings.PermissionModes), func(m string) bool { return m == string(permission.ModeAuto) })
	if !slices.Equal(schema.Properties.Mode.Enum, want) {
		t.Errorf("team schema's mode enum = %q, want %q", schema.Properties.Mode.Enum, want)
	}
}
