package keel

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/models"
)

// ModelInfo is a model the session can switch to.
type ModelInfo struct {
	ID, DisplayName string
	// Aliases are the short names that pick this model now (opus, sonnet…).
	Aliases       []string
	ContextWindow int64
}

// Models lists the models of the model list (the API's, refreshed daily, over keel's
// built-in table), newest first.
func (s *Session) Models() []ModelInfo {
	cat := s.s.Switches().ModelCatalog()
	list := cat.Listed()
	if list == nil {
		list = cat.Models()
	}
	out := make([]ModelInfo, 0, len(list))
	for _, m := range list {
		out = append(out, ModelInfo{ID: m.ID, DisplayName: m.DisplayName, Aliases: cat.AliasesOf(m.ID), ContextWindow: m.ContextWindow})
	}
	return out
}

// SwitchModel switches the main agent to the model called name — an id of the model list, a
// dated snapshot of one, or an alias — from the next prompt on; the model-switch hooks may
// refuse it. A name the list does not know is an error naming the closest ones, and nothing
// changes.
func (s *Session) SwitchModel(ctx context.Context, name string) error {
	name = strings.TrimSpace(name)
	if s.cfg.Provider != "" && s.cfg.Provider != string(ProviderAnthropic) {
		// keel knows no model list of other providers: the server says what it serves.
		return s.s.Switches().SwitchModel(ctx, name, "user")
	}
	cat := s.s.Switches().ModelCatalog()
	id := cat.Resolve(name)
	if _, ok := cat.Lookup(id); !ok && !models.IsAlias(name) {
		return fmt.Errorf("unknown model %q; %s", name, closestModels(cat, name))
	}
	return s.s.Switches().SwitchModel(ctx, id, "user")
}

// closestModels names the known models that share the most of name, or the aliases.
func closestModels(cat *models.Catalog, name string) string {
	var near []string
	for _, m := range cat.Models() {
		for _, part := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == ' ' }) {
			if len(part) > 2 && strings.Contains(m.ID, part) && !slices.Contains(near, m.ID) {
				near = append(near, m.ID)
			}
		}
	}
	if len(near) > 0 {
		return "did you mean " + strings.Join(near[:min(len(near), 3)], ", ") + "? (/model lists them all)"
	}
	return "the aliases are " + strings.Join(models.Aliases, ", ") + " (/model lists every model)"
}
