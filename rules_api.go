package keel

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
)

// PermissionRule is one allow, ask or deny rule in force.
type PermissionRule struct {
	// Behavior is allow, ask or deny; Rule is the rule as settings write it ("Bash(go test:*)").
	Behavior, Rule string
	// Source is where it comes from: managed, user, project, local, cli, session…; Path is
	// its settings file, when it has one.
	Source, Path string
}

// PermissionRules lists the main agent's rules, as they apply now.
func (s *Session) PermissionRules() []PermissionRule {
	var out []PermissionRule
	for _, r := range s.s.Config().PermissionRules() {
		out = append(out, PermissionRule{Behavior: r.Behavior.String(), Rule: r.String(), Source: r.Source.Name, Path: r.Source.Path})
	}
	return out
}

// AddPermissionRule adds rule (settings syntax) as an allow, ask or deny rule from the next
// call on, and keeps it in the project's local settings (.keel/settings.local.json).
func (s *Session) AddPermissionRule(behavior, rule string) error {
	u, err := ruleUpdate(permission.UpdateAddRules, behavior, rule, permission.DestinationLocalSettings)
	if err != nil {
		return err
	}
	return s.s.Config().ChangePermissions([]permission.Update{u})
}

// RemovePermissionRule removes rule from the rules of its behavior for this session, and
// from the user's or project's settings file it came from (a managed or command-line rule
// stays in force in the next session).
func (s *Session) RemovePermissionRule(behavior, rule string) error {
	u, err := ruleUpdate(permission.UpdateRemoveRules, behavior, rule, permission.DestinationSession)
	if err != nil {
		return err
	}
	if err := s.s.Config().ChangePermissions([]permission.Update{u}); err != nil {
		return err
	}
	for _, f := range s.s.Config().Settings().Files {
		if f.Path == "" || (f.Scope != settings.ScopeUser && f.Scope != settings.ScopeProject && f.Scope != settings.ScopeLocal) {
			continue
		}
		if err := removeRuleFromFile(f.Path, behavior, rule); err != nil {
			return err
		}
	}
	return nil
}

// removeRuleFromFile drops rule from permissions.<behavior> of the settings file at path, when
// it is there; a file without it is left untouched.
func removeRuleFromFile(path, behavior, rule string) error {
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), rule) {
		return nil
	}
	return settings.UpdateFile(path, func(doc map[string]any) error {
		perms, _ := doc["permissions"].(map[string]any)
		if perms == nil {
			return nil
		}
		list, _ := perms[behavior].([]any)
		kept := slices.DeleteFunc(slices.Clone(list), func(v any) bool { return v == rule })
		if len(kept) != len(list) {
			perms[behavior] = kept
		}
		return nil
	})
}

func ruleUpdate(typ, behavior, rule, dest string) (permission.Update, error) {
	rule = strings.TrimSpace(rule)
	b := permission.Allow
	switch behavior {
	case "allow":
	case "ask":
		b = permission.Ask
	case "deny":
		b = permission.Deny
	default:
		return permission.Update{}, fmt.Errorf("permission rule behavior %q is not one of allow, ask, deny", behavior)
	}
	r, err := permission.ParseRule(rule, b, permission.Source{Name: dest})
	if err != nil {
		return permission.Update{}, err
	}
	return permission.Update{Type: typ, Behavior: behavior, Destination: dest,
		Rules: []permission.RuleValue{{ToolName: r.Tool, RuleContent: r.Specifier}}}, nil
}
