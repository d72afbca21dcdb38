package skillset

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/skill"
)

// beforeShell runs the PreSkillShellCommand hooks before a skill's or command's "!"
// command: as Claude Code, allow adds nothing (the permission rules still decide), while a
// deny, an ask or a changed input keeps the command from running. Only trusted entries get
// here; an untrusted project's commands never run.
func (k *Set) beforeShell(ctx context.Context, c skill.ShellCommand) error {
	input, _ := json.Marshal(map[string]string{"command": c.Command})
	by := "user"
	if c.By == skill.ByModel {
		by = "claude"
	}
	out := k.c.Hooks.Run(ctx, hooks.PreSkillShellCommand, k.c.HookInput(k.c.Cwd(), hooks.Input{
		ToolName: "Bash", ToolInput: input, ToolUseID: "skillsh_" + uuid.NewString(),
		Extra: map[string]any{"command_name": c.Name, "command_source": string(c.Source), "invoked_by": by},
	}))
	for _, n := range out.SystemMessages {
		k.c.Warn(n)
	}
	switch {
	case out.Decision == hooks.DecisionBlock, out.Decision == hooks.DecisionAsk:
		return errors.New(cmp.Or(out.Reason, "a PreSkillShellCommand hook refused it"))
	case out.UpdatedInput != nil:
		return errors.New("a PreSkillShellCommand hook changed the command, which is never applied")
	}
	return nil
}
