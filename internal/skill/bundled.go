package skill

import (
	"embed"
	"io/fs"
	"path"
)

// bundledFS holds keel's own skills, one folder each like a user's skills directory.
//
//go:embed bundled
var bundledFS embed.FS

// bundledSkills parses the embedded skills. They are tested to load without problems, so a
// problem here is a build defect and the skill is left out rather than reported to the user.
func bundledSkills() []Skill {
	entries, _ := fs.ReadDir(bundledFS, "bundled")
	var out []Skill
	for _, e := range entries {
		p := path.Join("bundled", e.Name(), "SKILL.md")
		data, err := bundledFS.ReadFile(p)
		if err != nil {
			continue
		}
		s, _, ok := parseSkill(p, e.Name(), data, KindSkill, SourceBundled)
		if !ok {
			continue
		}
		s.read = func() (string, error) {
			data, err := bundledFS.ReadFile(p)
			if err != nil {
				return "", err
			}
			return splitFile(p, data).body, nil
		}
		out = append(out, s)
	}
	return out
}
