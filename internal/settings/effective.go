package settings

import "strings"

// Effective is the merged settings as one settings document, without origins: the shape of a
// settings file (get_settings answers with it). Unknown keys are left out.
func (s *Settings) Effective() map[string]any {
	known, _ := s.items()
	tree := map[string]any{}
	for _, it := range known {
		parts := strings.Split(it.key, ".")
		m := tree
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		leaf := parts[len(parts)-1]
		if it.list {
			l, _ := m[leaf].([]any)
			m[leaf] = append(l, it.value)
		} else {
			m[leaf] = it.value
		}
	}
	return tree
}
