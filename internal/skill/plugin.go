package skill

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Plugin is one enabled plugin's commands and skills. Its entries are namespaced, /Name:entry,
// so plugins never collide with each other or with the user's own; typing the bare name works
// too while no other entry has it (see [Catalog.Lookup]).
type Plugin struct {
	Name string
	// Root and DataDir are the plugin's folder and data folder: ${CLAUDE_PLUGIN_ROOT} and
	// ${CLAUDE_PLUGIN_DATA} in a body or in allowed-tools name them.
	Root, DataDir string
	// Commands are command files and folders of them (a sub-folder namespaces its commands:
	// research/code.md is research:code); a folder holding a SKILL.md is a skill.
	Commands []string
	// Skills are skill folders (holding SKILL.md) and folders of skill folders.
	Skills []string
}

// vars are the plugin's variables as they are written in its files.
func (p Plugin) vars() *strings.Replacer {
	return strings.NewReplacer("${CLAUDE_PLUGIN_ROOT}", p.Root, "${CLAUDE_PLUGIN_DATA}", p.DataDir)
}

// loadPlugin reads one plugin's entries; a file reached twice (a declared skill folder inside
// the default skills/ folder) loads once.
func loadPlugin(files entryFiles, p Plugin) ([]Skill, []Problem) {
	var found []Skill
	var problems []Problem
	add := func(s []Skill, pr []Problem) {
		found = append(found, s...)
		problems = append(problems, pr...)
	}
	for _, path := range p.Commands {
		switch st, err := os.Stat(path); {
		case err != nil:
			problems = append(problems, Problem{Path: path, Msg: err.Error(), Skipped: true})
		case !st.IsDir():
			add(loadCommandFile(files, path, SourcePlugin))
		case isFile(filepath.Join(path, "SKILL.md")):
			add(loadOneSkill(files, path, SourcePlugin))
		default:
			add(loadCommandDir(files, path, SourcePlugin))
		}
	}
	for _, path := range p.Skills {
		if isFile(filepath.Join(path, "SKILL.md")) {
			add(loadOneSkill(files, path, SourcePlugin))
		} else {
			add(loadSkillDir(files, path, SourcePlugin))
		}
	}
	vars := p.vars()
	var out []Skill
	var seen []string
	for _, s := range found {
		if slices.Contains(seen, s.Path) {
			continue
		}
		seen = append(seen, s.Path)
		s.Name = p.Name + ":" + s.Name
		s.Plugin = p.Name
		s.pluginVars = vars
		for i, t := range s.AllowedTools {
			s.AllowedTools[i] = vars.Replace(t)
		}
		out = append(out, s)
	}
	return out, problems
}

// loadCommandFile reads one command file named by a plugin; its name is the file's.
func loadCommandFile(files entryFiles, path string, src Source) ([]Skill, []Problem) {
	data, err := files.read(path)
	if err != nil {
		return nil, []Problem{{Path: path, Msg: err.Error(), Skipped: true}}
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	s, probs, ok := parseSkill(path, name, data, KindCommand, src)
	if !ok {
		return nil, probs
	}
	s.read = fileBody(path)
	return []Skill{s}, probs
}

// bareLookup finds the one plugin entry whose name without its plugin namespace is name.
func (c *Catalog) bareLookup(name string) (*Skill, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var match *Skill
	for _, s := range c.byName {
		if s.Plugin != "" && strings.TrimPrefix(s.Name, s.Plugin+":") == name {
			if match != nil {
				return nil, false // two plugins have it: the namespace must be typed
			}
			match = s
		}
	}
	return match, match != nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
