package trust

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGrantRevoke(t *testing.T) {
	home := filepath.Join(t.TempDir(), "keelhome")
	proj := t.TempDir()
	sub := filepath.Join(proj, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	check := func(dir string, want bool) {
		t.Helper()
		got, err := IsTrusted(home, dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("IsTrusted(%s) = %v, want %v", dir, got, want)
		}
	}
	check(proj, false) // no record yet
	if err := Grant(home, link); err != nil {
		t.Fatal(err)
	}
	check(proj, true) // granted through a symlink, same project
	check(link, true)
	check(sub, false) // trust is per directory
	if err := Revoke(home, proj); err != nil {
		t.Fatal(err)
	}
	check(link, false)
}

func TestDamagedRecord(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, FileName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, err := IsTrusted(home, t.TempDir()); err == nil || ok {
		t.Errorf("IsTrusted on a damaged record = %v, %v; want false and an error", ok, err)
	}
}
