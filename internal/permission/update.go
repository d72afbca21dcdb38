package permission

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/toolpath"
)

// Update is a change to the permission context in the Agent SDK's PermissionUpdate shape:
// the "always allow" choices a permission question offers (as suggestions) and the changes
// an answer or a PermissionRequest hook asks for.
type Update struct {
	// Type is addRules, replaceRules, removeRules, setMode, addDirectories or
	// removeDirectories.
	Type        string      `json:"type"`
	Rules       []RuleValue `json:"rules,omitempty"`
	Behavior    string      `json:"behavior,omitempty"`
	Mode        string      `json:"mode,omitempty"`
	Directories []string    `json:"directories,omitempty"`
	// Destination is where the change lives: session, cliArg, localSettings,
	// projectSettings or userSettings. Every destination applies to this session; the
	// settings ones are also written to that file by whoever answers the question.
	Destination string `json:"destination"`
}

// RuleValue is one rule of an [Update]: a tool and the text inside its parentheses.
type RuleValue struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// Update types and destinations.
const (
	UpdateAddRules          = "addRules"
	UpdateReplaceRules      = "replaceRules"
	UpdateRemoveRules       = "removeRules"
	UpdateSetMode           = "setMode"
	UpdateAddDirectories    = "addDirectories"
	UpdateRemoveDirectories = "removeDirectories"

	DestinationSession         = "session"
	DestinationCLIArg          = "cliArg"
	DestinationLocalSettings   = "localSettings"
	DestinationProjectSettings = "projectSettings"
	DestinationUserSettings    = "userSettings"
)

var (
	updateTypes  = []string{UpdateAddRules, UpdateReplaceRules, UpdateRemoveRules, UpdateSetMode, UpdateAddDirectories, UpdateRemoveDirectories}
	destinations = []string{DestinationSession, DestinationCLIArg, DestinationLocalSettings, DestinationProjectSettings, DestinationUserSettings}
)

// ParseUpdates decodes and checks a JSON array of updates. A bad entry is an error naming
// its index and the valid values; nothing is applied from a list with an error.
func ParseUpdates(data json.RawMessage) ([]Update, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	var ups []Update
	if err := json.Unmarshal(data, &ups); err != nil {
		return nil, fmt.Errorf("permission updates are not a list of PermissionUpdate objects: %w", err)
	}
	for i, u := range ups {
		if err := u.check(); err != nil {
			return nil, fmt.Errorf("permission update %d: %w", i, err)
		}
	}
	return ups, nil
}

func (u Update) check() error {
	if !slices.Contains(updateTypes, u.Type) {
		return fmt.Errorf("type %q is not one of %s", u.Type, strings.Join(updateTypes, ", "))
	}
	if u.Destination != "" && !slices.Contains(destinations, u.Destination) {
		return fmt.Errorf("destination %q is not one of %s", u.Destination, strings.Join(destinations, ", "))
	}
	switch u.Type {
	case UpdateSetMode:
		if _, err := ParseMode(u.Mode); err != nil || u.Mode == "" {
			return fmt.Errorf("setMode: %v", modeError(u.Mode, err))
		}
	case UpdateAddRules, UpdateReplaceRules, UpdateRemoveRules:
		if _, err := u.behavior(); err != nil {
			return err
		}
		if _, err := u.ParsedRules(); err != nil {
			return err
		}
	}
	return nil
}

func modeError(mode string, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("mode %q is empty", mode)
}

func (u Update) behavior() (Behavior, error) {
	switch u.Behavior {
	case "allow":
		return Allow, nil
	case "deny":
		return Deny, nil
	case "ask":
		return Ask, nil
	}
	return 0, fmt.Errorf("%s: behavior %q is not one of allow, deny, ask", u.Type, u.Behavior)
}

// ParsedRules returns the update's rules as keel rules, sourced from its destination.
func (u Update) ParsedRules() ([]Rule, error) {
	b, err := u.behavior()
	if err != nil {
		return nil, err
	}
	src := Source{Name: u.Destination}
	if src.Name == "" {
		src.Name = DestinationSession
	}
	rules := make([]Rule, 0, len(u.Rules))
	for _, v := range u.Rules {
		text := v.ToolName
		if v.RuleContent != "" {
			text += "(" + v.RuleContent + ")"
		}
		r, err := ParseRule(text, b, src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u.Type, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// RuleTexts renders the update's rules the way settings files write them.
func (u Update) RuleTexts() []string {
	out := make([]string, 0, len(u.Rules))
	for _, v := range u.Rules {
		if v.RuleContent == "" {
			out = append(out, v.ToolName)
		} else {
			out = append(out, v.ToolName+"("+v.RuleContent+")")
		}
	}
	return out
}

// Suggest turns an ask into the updates a user may pick to stop being asked: the allow
// rules that would let the call through (kept in local settings, as Claude Code suggests),
// the directories outside the working ones that the call touches, and acceptEdits for an
// edit inside them.
func Suggest(req AskRequest, dirs []string) []Update {
	var out []Update
	if len(req.Suggestions) > 0 {
		u := Update{Type: UpdateAddRules, Behavior: "allow", Destination: DestinationLocalSettings}
		for _, r := range req.Suggestions {
			u.Rules = append(u.Rules, RuleValue{ToolName: r.Tool, RuleContent: r.Specifier})
		}
		out = append(out, u)
	}
	var outsideDirs []string
	edit := req.Request.Kind == KindEdit || kinds.Get()[canonicalTool(req.Request.Tool)] == KindEdit
	for _, p := range req.Request.Paths {
		abs := toolpath.Resolve(p, req.Request.Cwd, "").Real
		if !slices.ContainsFunc(dirs, func(d string) bool { return toolpath.Within(abs, toolpath.Real(d)) }) {
			if d := filepath.Dir(abs); !slices.Contains(outsideDirs, d) {
				outsideDirs = append(outsideDirs, d)
			}
		}
	}
	if len(outsideDirs) > 0 {
		out = append(out, Update{Type: UpdateAddDirectories, Directories: outsideDirs, Destination: DestinationSession})
	} else if edit {
		out = append(out, Update{Type: UpdateSetMode, Mode: string(ModeAcceptEdits), Destination: DestinationSession})
	}
	return out
}

// Apply makes updates part of this checker's policy for the rest of the session, and of
// every ceiling over it for rules and directories: the person answering outranks the static
// ceiling for what they approved. A list with a bad entry changes nothing.
func (c *Checker) Apply(updates []Update) error {
	for i, u := range updates {
		if err := u.check(); err != nil {
			return fmt.Errorf("permission update %d: %w", i, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range updates {
		switch u.Type {
		case UpdateSetMode:
			m, _ := ParseMode(u.Mode)
			c.policy.Mode = m
		case UpdateAddDirectories, UpdateRemoveDirectories:
			c.policy.Dirs = editDirs(c.policy.Dirs, u)
			for i := range c.policy.Ceilings {
				c.policy.Ceilings[i].Dirs = editDirs(c.policy.Ceilings[i].Dirs, u)
			}
		default:
			rules, _ := u.ParsedRules()
			c.policy.Rules = editRules(c.policy.Rules, u, rules)
			for i := range c.policy.Ceilings {
				c.policy.Ceilings[i].Rules = editRules(c.policy.Ceilings[i].Rules, u, rules)
			}
		}
	}
	return nil
}

// editDirs adds or removes u's directories; the first working directory always stays.
func editDirs(dirs []string, u Update) []string {
	for _, d := range u.Directories {
		d = filepath.Clean(d)
		switch {
		case u.Type == UpdateAddDirectories && !slices.Contains(dirs, d):
			dirs = append(dirs, d)
		case u.Type == UpdateRemoveDirectories:
			if i := slices.Index(dirs, d); i > 0 {
				dirs = slices.Delete(dirs, i, i+1)
			}
		}
	}
	return dirs
}

// editRules adds, replaces or removes rules of u's behavior. Replacing drops every rule of
// that behavior that came from the same destination and adds the new ones.
func editRules(have []Rule, u Update, rules []Rule) []Rule {
	b, _ := u.behavior()
	switch u.Type {
	case UpdateAddRules:
		return append(slices.Clone(have), rules...)
	case UpdateReplaceRules:
		dest := u.Destination
		if dest == "" {
			dest = DestinationSession
		}
		kept := slices.DeleteFunc(slices.Clone(have), func(r Rule) bool { return r.Behavior == b && r.Source.Name == dest })
		return append(kept, rules...)
	case UpdateRemoveRules:
		return slices.DeleteFunc(slices.Clone(have), func(r Rule) bool {
			return r.Behavior == b && slices.ContainsFunc(rules, func(x Rule) bool { return x.String() == r.String() })
		})
	}
	return have
}
