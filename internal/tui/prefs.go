package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// prefs are the terminal UI's own choices, kept between runs in Config.PrefsPath: the colour
// theme (/theme) and the editor mode (/vim). They are not settings: no other frontend reads
// them.
type prefs struct {
	Theme      string `json:"theme,omitempty"`
	EditorMode string `json:"editorMode,omitempty"`
}

// loadPrefs reads the preferences; a missing or unreadable file gives the defaults.
func loadPrefs(path string) prefs {
	var p prefs
	if path == "" {
		return p
	}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &p)
	}
	return p
}

// savePrefs writes the preferences; without a path they last for this run only.
func savePrefs(path string, p prefs) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save the terminal UI's preferences: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save the terminal UI's preferences: %w", err)
	}
	return nil
}
