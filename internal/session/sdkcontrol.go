package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/snapshot"
)

// This file holds what a controlling program (the Agent SDK's control requests) asks of a
// session beyond prompts: save permission answers, measure the context, rewind files, stop
// tasks, switch models with their hooks, read and change settings, reload skills.

// PersistPermissions writes the permission updates meant for a settings file there:
// localSettings and projectSettings are the project's .keel/settings.local.json and
// .keel/settings.json, userSettings is $KEEL_HOME/settings.json. Others are skipped.
func (s *Session) PersistPermissions(updates []permission.Update) error {
	var errs []error
	for _, u := range updates {
		path := s.settingsFile(u.Destination)
		if path == "" {
			continue
		}
		if err := settings.UpdateFile(path, func(doc map[string]any) error { return applyUpdate(doc, u) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// settingsFile is the file a PermissionUpdate destination (or update_settings source) names.
func (s *Session) settingsFile(dest string) string {
	switch dest {
	case permission.DestinationLocalSettings:
		return filepath.Join(s.projectDir, ".keel", "settings.local.json")
	case permission.DestinationProjectSettings:
		return filepath.Join(s.projectDir, ".keel", "settings.json")
	case permission.DestinationUserSettings:
		if s.opts.Home == "" {
			return ""
		}
		return filepath.Join(s.opts.Home, "settings.json")
	}
	return ""
}

// applyUpdate edits a settings document as u says.
func applyUpdate(doc map[string]any, u permission.Update) error {
	perms, _ := doc["permissions"].(map[string]any)
	if perms == nil {
		perms = map[string]any{}
	}
	list := func(key string) []string {
		var out []string
		if l, ok := perms[key].([]any); ok {
			for _, v := range l {
				if s, ok := v.(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	switch u.Type {
	case permission.UpdateAddRules, permission.UpdateReplaceRules, permission.UpdateRemoveRules:
		have := list(u.Behavior)
		switch u.Type {
		case permission.UpdateReplaceRules:
			have = nil
			fallthrough
		case permission.UpdateAddRules:
			for _, r := range u.RuleTexts() {
				if !slices.Contains(have, r) {
					have = append(have, r)
				}
			}
		case permission.UpdateRemoveRules:
			have = slices.DeleteFunc(have, func(r string) bool { return slices.Contains(u.RuleTexts(), r) })
		}
		perms[u.Behavior] = have
	case permission.UpdateSetMode:
		perms["defaultMode"] = u.Mode
	case permission.UpdateAddDirectories, permission.UpdateRemoveDirectories:
		have := list("additionalDirectories")
		for _, d := range u.Directories {
			if u.Type == permission.UpdateAddDirectories && !slices.Contains(have, d) {
				have = append(have, d)
			} else if u.Type == permission.UpdateRemoveDirectories {
				have = slices.DeleteFunc(have, func(x string) bool { return x == d })
			}
		}
		perms["additionalDirectories"] = have
	}
	doc["permissions"] = perms
	return nil
}

// ContextPart is one part of what the next request carries.
type ContextPart struct {
	ID, Name string
	Tokens   int64
	// Kind is used, free or buffer.
	Kind string
}

// ContextUsage is the next request's context, by part, against the model's window.
type ContextUsage struct {
	Parts  []ContextPart
	Window int64
	Model  string
	// Memory is each memory file's share.
	Memory []MemoryShare
}

// MemoryShare is one memory file in the context.
type MemoryShare struct {
	Path, Kind string
	Tokens     int64
}

// tokensOf approximates tokens as a quarter of the bytes, as keel does wherever it has no
// count from the provider.
func tokensOf(n int) int64 { return int64((n + 3) / 4) }

// ContextUsage measures what the next request of the main agent would send.
func (s *Session) ContextUsage(ctx context.Context) ContextUsage {
	sys := s.systemPrompt(ctx)
	var sysBytes int
	for _, b := range sys.Blocks {
		sysBytes += len(b.Text)
	}
	var toolBytes, mcpBytes int
	for _, t := range s.pool(ctx).Tools() {
		n := len(t.Name()) + len(t.Description()) + len(t.InputSchema())
		if isMCPName(t.Name()) {
			mcpBytes += n
		} else {
			toolBytes += n
		}
	}
	var msgBytes int
	for _, m := range s.History() {
		b, _ := json.Marshal(m.Content)
		msgBytes += len(b)
	}
	var memTokens int64
	var mem []MemoryShare
	for _, f := range s.MemoryFiles() {
		t := tokensOf(len(f.Content))
		memTokens += t
		mem = append(mem, MemoryShare{Path: f.Path, Kind: memoryType(f.Kind), Tokens: t})
	}
	window := s.opts.ContextWindow
	if window == 0 {
		window = DefaultContextWindow
	}
	used := []ContextPart{
		{ID: "system_prompt", Name: "System prompt", Tokens: tokensOf(sysBytes) - memTokens, Kind: "used"},
		{ID: "system_tools", Name: "System tools", Tokens: tokensOf(toolBytes), Kind: "used"},
		{ID: "mcp_tools", Name: "MCP tools", Tokens: tokensOf(mcpBytes), Kind: "used"},
		{ID: "memory_files", Name: "Memory files", Tokens: memTokens, Kind: "used"},
		{ID: "messages", Name: "Messages", Tokens: tokensOf(msgBytes), Kind: "used"},
	}
	var total int64
	for _, p := range used {
		total += p.Tokens
	}
	buffer := window - s.compactThreshold()
	free := max(window-total-buffer, 0)
	parts := append(used, ContextPart{ID: "autocompact_buffer", Name: "Autocompact buffer", Tokens: buffer, Kind: "buffer"},
		ContextPart{ID: "free_space", Name: "Free space", Tokens: free, Kind: "free"})
	return ContextUsage{Parts: parts, Window: window, Model: s.Model(), Memory: mem}
}

func isMCPName(name string) bool { return len(name) > 5 && name[:5] == "mcp__" }

// memoryType names a memory file's kind as the SDK does (User, Project, Local, Managed).
func memoryType(k memory.Kind) string {
	switch k {
	case memory.KindUser:
		return "User"
	case memory.KindLocal:
		return "Local"
	case memory.KindManaged:
		return "Managed"
	}
	return "Project"
}

// RewindFiles puts the files back as they were before the prompt with transcript id
// userMessageID; with dryRun it only lists what would change. The conversation is kept.
func (s *Session) RewindFiles(ctx context.Context, userMessageID string, dryRun bool) ([]string, error) {
	if s.snapshots == nil {
		return nil, errors.New("this session keeps no file history")
	}
	if dryRun {
		snaps := s.snapshots.Snapshots()
		k := slices.IndexFunc(snaps, func(sn snapshot.Snapshot) bool { return sn.ID == userMessageID })
		if k < 0 {
			return nil, fmt.Errorf("no file history for message %s", userMessageID)
		}
		seen := map[string]bool{}
		for _, sn := range snaps[k:] {
			for _, f := range sn.Files {
				seen[f.Path] = true
			}
		}
		out := make([]string, 0, len(seen))
		for p := range seen {
			out = append(out, p)
		}
		sort.Strings(out)
		return out, nil
	}
	rep, err := s.Rewind(ctx, userMessageID, true, false)
	changed := append(append(rep.Files.Restored, rep.Files.Deleted...), rep.Files.Failed...)
	sort.Strings(changed)
	return changed, err
}

// StopTask stops a background task (a background agent or shell).
func (s *Session) StopTask(ctx context.Context, id string) error {
	if s.agents == nil {
		return fmt.Errorf("no task %q", id)
	}
	if _, err := s.agents.tasks.Stop(ctx, id); err != nil {
		return fmt.Errorf("stop task %s: %w", id, err)
	}
	return nil
}

// ReloadSkills reads the skills and commands from disk again, between turns: the main
// agent's listing, Skill tool and /commands use the new set. Subagents keep the set they
// were built with.
func (s *Session) ReloadSkills(ctx context.Context) error {
	if !s.acquire() {
		return ErrBusy
	}
	defer s.release()
	out := s.hooks.Run(ctx, hooks.ConfigChange, s.hookInput(s.Cwd(), hooks.Input{Source: "skills"}))
	if out.Decision == hooks.DecisionBlock {
		return fmt.Errorf("skill reload refused by a ConfigChange hook: %s", out.Reason)
	}
	s.loadSkills()
	for i, t := range s.builtins {
		if t.Name() == skillToolName {
			s.builtins[i] = s.skills.Tool(skill.ToolOptions{Runner: s.forkRunner, Grants: s.grants})
		}
	}
	s.prompt.Clear()
	return nil
}

// skillToolName is the name of the skill package's tool.
const skillToolName = "Skill"

// SwitchModel changes the model for the next Send, as set_model or /model does: the
// PreModelSwitch hooks may refuse it, the PostModelSwitch hooks hear of it.
func (s *Session) SwitchModel(ctx context.Context, model, source string) error {
	from := s.Model()
	in := hooks.Input{Source: source, Extra: map[string]any{
		"from_model": from, "to_model": model, "requested_model": model, "context_tokens": s.lastContextTokens(),
		"prompt_cache_warm": s.CacheSafe() != nil, "cache_ttl": "5m", "estimated_cache_write_usd": 0, "pricing": "catalog",
	}}
	pre := s.hooks.Run(ctx, hooks.PreModelSwitch, s.hookInput(s.Cwd(), in))
	if pre.Decision == hooks.DecisionBlock {
		reason := pre.Reason
		if reason == "" {
			reason = "a PreModelSwitch hook refused it"
		}
		return fmt.Errorf("switch to %s refused: %s", model, reason)
	}
	s.SetModel(model)
	post := s.hooks.Run(ctx, hooks.PostModelSwitch, s.hookInput(s.Cwd(), in))
	s.mu.Lock()
	s.startContext = append(s.startContext, post.AdditionalContext...)
	s.mu.Unlock()
	return nil
}

// lastContextTokens is what the last main-thread request carried, 0 before the first.
func (s *Session) lastContextTokens() int64 {
	cs := s.CacheSafe()
	if cs == nil {
		return 0
	}
	b, _ := json.Marshal(cs.Messages)
	return tokensOf(len(b))
}

// EffectiveSettings returns the merged settings and each file that contributed.
func (s *Session) EffectiveSettings() (json.RawMessage, []SettingsFile) {
	var files []SettingsFile
	for _, f := range s.settings.Files {
		if f.State == settings.FileLoaded {
			files = append(files, SettingsFile{Scope: string(f.Scope), Path: f.Path})
		}
	}
	b, err := json.Marshal(s.settings.Effective())
	if err != nil {
		b = []byte("{}")
	}
	return b, files
}

// SettingsFile is one settings source that was read.
type SettingsFile struct{ Scope, Path string }

// ApplyFlagSettings layers settings over the command line's for the rest of the session:
// permission rules and the mode apply at once; the ConfigChange hooks hear of it.
func (s *Session) ApplyFlagSettings(ctx context.Context, raw json.RawMessage) error {
	return s.layerSettings(ctx, "--settings (apply_flag_settings)", raw, "policy_settings")
}

// UpdateSettings writes settings into the local or user settings file and applies them.
func (s *Session) UpdateSettings(ctx context.Context, destination string, raw json.RawMessage) error {
	path := s.settingsFile(destination)
	if path == "" {
		return fmt.Errorf("update settings: no %s file in this session", destination)
	}
	var patch map[string]any
	if err := json.Unmarshal(raw, &patch); err != nil {
		return fmt.Errorf("update settings: %w", err)
	}
	if err := settings.UpdateFile(path, func(doc map[string]any) error {
		for k, v := range patch {
			doc[k] = v
		}
		return nil
	}); err != nil {
		return err
	}
	source := "local_settings"
	if destination == permission.DestinationUserSettings {
		source = "user_settings"
	}
	return s.layerSettings(ctx, path, raw, source)
}

// layerSettings applies the permission part of a settings object now, after the
// ConfigChange hooks allowed it.
func (s *Session) layerSettings(ctx context.Context, label string, raw json.RawMessage, source string) error {
	out := s.hooks.Run(ctx, hooks.ConfigChange, s.hookInput(s.Cwd(), hooks.Input{Source: source, Extra: map[string]any{"file_path": label}}))
	if out.Decision == hooks.DecisionBlock {
		return fmt.Errorf("settings change refused by a ConfigChange hook: %s", out.Reason)
	}
	var doc struct {
		Permissions struct {
			Allow, Ask, Deny []string
			DefaultMode      string `json:"defaultMode"`
		} `json:"permissions"`
		Model string `json:"model"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	src := permission.Source{Name: "cli", Path: label, Dir: s.opts.Cwd}
	var rules []permission.Rule
	for _, set := range []struct {
		texts []string
		b     permission.Behavior
	}{{doc.Permissions.Allow, permission.Allow}, {doc.Permissions.Ask, permission.Ask}, {doc.Permissions.Deny, permission.Deny}} {
		rs, errs := permission.ParseRules(set.texts, set.b, src)
		if len(errs) > 0 {
			return fmt.Errorf("settings: %w", errors.Join(errs...))
		}
		rules = append(rules, rs...)
	}
	s.checker.AddRules(rules...)
	if doc.Permissions.DefaultMode != "" {
		if err := s.SetPermissionMode(doc.Permissions.DefaultMode); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	if doc.Model != "" {
		s.SetModel(doc.Model)
	}
	return nil
}
