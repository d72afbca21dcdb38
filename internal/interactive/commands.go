package interactive

import (
	"context"
	"io"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/tui"
)

// What the UI's slash commands read and change (/doctor, /model, /permissions, /config,
// /hooks, /todos, /bashes, /statusline, /export), passed through to the session in use.

var (
	_ tui.Doctorer         = (*backend)(nil)
	_ tui.ModelSwitcher    = (*backend)(nil)
	_ tui.RuleEditor       = (*backend)(nil)
	_ tui.HookLister       = (*backend)(nil)
	_ tui.TodoLister       = (*backend)(nil)
	_ tui.ShellLister      = (*backend)(nil)
	_ tui.StyleSwitcher    = (*backend)(nil)
	_ tui.StatusLiner      = (*backend)(nil)
	_ tui.SettingsReporter = (*backend)(nil)
	_ tui.Exporter         = (*backend)(nil)
)

// Doctor runs the session's checks and the sandbox's, which `keel doctor` prints too.
func (b *backend) Doctor(ctx context.Context) []keel.Check {
	return append(b.s().Doctor(ctx), b.s().SandboxChecks(ctx)...)
}

func (b *backend) Models() []keel.ModelInfo { return b.s().Models() }
func (b *backend) SwitchModel(ctx context.Context, name string) error {
	return b.s().SwitchModel(ctx, name)
}
func (b *backend) PermissionRules() []keel.PermissionRule { return b.s().PermissionRules() }
func (b *backend) AddPermissionRule(behavior, rule string) error {
	return b.s().AddPermissionRule(behavior, rule)
}
func (b *backend) RemovePermissionRule(behavior, rule string) error {
	return b.s().RemovePermissionRule(behavior, rule)
}
func (b *backend) Hooks() []keel.Hook                 { return b.s().Hooks() }
func (b *backend) Todos() []keel.Todo                 { return b.s().Todos() }
func (b *backend) Shells() []keel.Shell               { return b.s().Shells() }
func (b *backend) KillShell(id string) error          { return b.s().KillShell(id) }
func (b *backend) OutputStyles() []keel.OutputStyle   { return b.s().OutputStyles() }
func (b *backend) OutputStyle() string                { return b.s().OutputStyle() }
func (b *backend) StatusLine() keel.StatusLine        { return b.s().StatusLine() }
func (b *backend) SetStatusLine(command string) error { return b.s().SetStatusLine(command) }
func (b *backend) SettingsFiles() []keel.SettingsFile { return b.s().SettingsFiles() }
func (b *backend) SettingsProblems() []keel.Notice    { return b.s().SettingsProblems() }
func (b *backend) SetOutputStyle(ctx context.Context, name string) error {
	return b.s().SetOutputStyle(ctx, name)
}
func (b *backend) Export(ctx context.Context, w io.Writer) error { return b.s().Export(ctx, w) }

var _ tui.SkillReloader = (*backend)(nil)

// ReloadSkills reads the skills again (/skills reload).
func (b *backend) ReloadSkills(ctx context.Context) error { return b.s().ReloadSkills(ctx) }
