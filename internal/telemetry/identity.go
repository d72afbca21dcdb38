package telemetry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// InstallationID is user.id: an anonymous identifier of this keel installation, made once
// and kept in home. Empty when home is empty or cannot be written.
func InstallationID(home string) string {
	if home == "" {
		return ""
	}
	p := filepath.Join(home, "telemetry-id")
	if b, err := os.ReadFile(p); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id
		}
	}
	id := uuid.NewString()
	if err := os.MkdirAll(home, 0o700); err != nil {
		return ""
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		// Another keel made it first: use that one.
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b))
		}
		return ""
	}
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.WriteString(id + "\n"); err != nil {
		return ""
	}
	return id
}
