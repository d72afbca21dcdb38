package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// UpdateFile changes the settings file at path with edit, keeping every key edit does not
// touch, and writes it back atomically: a crash leaves the old file or the new one, never a
// mix. A missing file starts empty; a malformed one is an error and is left as it is.
func UpdateFile(path string, edit func(doc map[string]any) error) error {
	doc := map[string]any{}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("read %s: %w (the file was not changed)", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := edit(doc); err != nil {
		return err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.WriteFile(path, append(out, '\n'), 0o644)
}
