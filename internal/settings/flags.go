package settings

import "encoding/json"

// Flags are the command-line flags that set settings keys. Each set flag becomes its own
// CLI-scope source labelled with the flag's name, so provenance shows "--model".
type Flags struct {
	Model           string   // --model
	PermissionMode  string   // --permission-mode
	AllowedTools    []string // --allowedTools
	DisallowedTools []string // --disallowedTools
	AddDirs         []string // --add-dir
}

func (f Flags) sources() []Source {
	var out []Source
	add := func(label string, doc any) {
		data, err := json.Marshal(doc)
		if err != nil {
			panic(err) // maps of strings always marshal
		}
		out = append(out, Source{Scope: ScopeCLI, Path: label, Inline: data, flag: true})
	}
	perms := func(key string, v any) map[string]any {
		return map[string]any{"permissions": map[string]any{key: v}}
	}
	if f.Model != "" {
		add("--model", map[string]any{"model": f.Model})
	}
	if f.PermissionMode != "" {
		add("--permission-mode", perms("defaultMode", f.PermissionMode))
	}
	if len(f.AllowedTools) > 0 {
		add("--allowedTools", perms("allow", f.AllowedTools))
	}
	if len(f.DisallowedTools) > 0 {
		add("--disallowedTools", perms("deny", f.DisallowedTools))
	}
	if len(f.AddDirs) > 0 {
		add("--add-dir", perms("additionalDirectories", f.AddDirs))
	}
	return out
}
