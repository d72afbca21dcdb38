// Package settingsedit changes keel's settings files on a user's or a controlling program's
// behalf: permission answers remembered ("always allow"), directories added, the mode set,
// and keys written (the Agent SDK's update_settings). Every change is a read-modify-write of
// one file (settings.UpdateFile: the file keeps its other keys, and is replaced whole), and a
// settings object to apply at once is read into the rules, mode and model it sets. A session's
// [Configuration] is those changes as its frontends and controlling programs make them: the
// file written, then the rules, mode and model layered over the running session.
package settingsedit

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
)

// File is the settings file a destination names for a session in projectDir with keel's
// directory home: localSettings and projectSettings are the project's
// .keel/settings.local.json and .keel/settings.json, userSettings is home's settings.json;
// "" for any other (session, cliArg) or a user file without home.
func File(dest, projectDir, home string) string {
	switch dest {
	case permission.DestinationLocalSettings:
		return filepath.Join(projectDir, ".keel", "settings.local.json")
	case permission.DestinationProjectSettings:
		return filepath.Join(projectDir, ".keel", "settings.json")
	case permission.DestinationUserSettings:
		if home == "" {
			return ""
		}
		return filepath.Join(home, "settings.json")
	}
	return ""
}

// Persist writes each update into the settings file of its destination (see [File]);
// updates for no file are skipped.
func Persist(projectDir, home string, updates []permission.Update) error {
	var errs []error
	for _, u := range updates {
		path := File(u.Destination, projectDir, home)
		if path == "" {
			continue
		}
		if err := settings.UpdateFile(path, func(doc map[string]any) error { return applyUpdate(doc, u) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Merge writes the top-level keys of patch, a JSON object, into the settings file at path.
func Merge(path string, patch json.RawMessage) error {
	var keys map[string]any
	if err := json.Unmarshal(patch, &keys); err != nil {
		return fmt.Errorf("update settings: %w", err)
	}
	return settings.UpdateFile(path, func(doc map[string]any) error {
		for k, v := range keys {
			doc[k] = v
		}
		return nil
	})
}

// Change is what a settings object layered over a running session changes at once.
type Change struct {
	// Rules are its permission rules, sourced from label.
	Rules []permission.Rule
	// Mode and Model are its defaultMode and model; "" leaves them.
	Mode, Model string
}

// Read reads the parts of a settings object a running session applies at once: permission
// rules (relative paths anchored at dir), the default mode and the model. label names
// where it came from, in the rules' sources.
func Read(raw json.RawMessage, label, dir string) (Change, error) {
	var doc struct {
		Permissions struct {
			Allow, Ask, Deny []string
			DefaultMode      string `json:"defaultMode"`
		} `json:"permissions"`
		Model string `json:"model"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Change{}, fmt.Errorf("settings: %w", err)
	}
	src := permission.Source{Name: "cli", Path: label, Dir: dir}
	c := Change{Mode: doc.Permissions.DefaultMode, Model: doc.Model}
	for _, set := range []struct {
		texts []string
		b     permission.Behavior
	}{{doc.Permissions.Allow, permission.Allow}, {doc.Permissions.Ask, permission.Ask}, {doc.Permissions.Deny, permission.Deny}} {
		rs, errs := permission.ParseRules(set.texts, set.b, src)
		if len(errs) > 0 {
			return Change{}, fmt.Errorf("settings: %w", errors.Join(errs...))
		}
		c.Rules = append(c.Rules, rs...)
	}
	return c, nil
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
