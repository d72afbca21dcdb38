package settings

import "strings"

// Effective is the merged settings as one settings document, without origins: the shape of a
// settings file (get_settings answers with it). Unknown keys are left out.
func (s *Settings) Effective() map[string]any {
	known, _ := s.items()
	return settingsTree(known, func(it shown) any { return it.value })
}

// settingsTree nests items by their dotted keys into the settings' own shape, with leaf(it)
// at each leaf and a list of them where the key is a list.
func settingsTree[V any](items []shown, leaf func(shown) V) map[string]any {
	tree := map[string]any{}
	for _, it := range items {
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
		name := parts[len(parts)-1]
		if it.list {
			l, _ := m[name].([]V)
			m[name] = append(l, leaf(it))
		} else {
			m[name] = leaf(it)
		}
	}
	return tree
}
