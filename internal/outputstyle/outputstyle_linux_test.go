package outputstyle

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/swaptest"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestLoadFIFOStyle: a FIFO named like a style, read at every session's start, is one of
// Load's problems at once, not a wait for a writer that never comes.
func TestLoadFIFOStyle(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "stuck.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []error, 1)
	go func() { _, errs := Load([]Dir{{Path: dir}}); got <- errs }()
	if errs := waittest.Recv(t, "Load to return", got); len(errs) == 0 {
		t.Error("Load read a FIFO as a style")
	}
}

// TestLoadUnderASwap: a style file a command keeps exchanging with a link to a file the
// refusal covers is read as the decoy or refused, never the secret: the refusal judges, and
// Load reads, one resolution of the name.
func TestLoadUnderASwap(t *testing.T) {
	base := t.TempDir()
	styles, secrets := filepath.Join(base, "styles"), filepath.Join(base, "secrets")
	for _, d := range []string{styles, secrets} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(secrets, "k.md")
	if err := os.WriteFile(secret, []byte("STYLE-SECRET-11"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(styles, "a.md"), []byte("decoy style"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(styles, "b.lnk")); err != nil {
		t.Fatal(err)
	}
	refuse := swaptest.RefuseUnder(secrets)
	stop := swaptest.Start(t, filepath.Join(styles, "a.md"), filepath.Join(styles, "b.lnk"))
	defer stop()
	for range 2000 {
		got, _ := Load([]Dir{{Path: styles, Refuse: refuse}})
		for _, s := range got {
			if strings.Contains(s.Prompt, "STYLE-SECRET-11") {
				t.Fatalf("style %s carries the refused file's content", s.Source)
			}
		}
	}
}
