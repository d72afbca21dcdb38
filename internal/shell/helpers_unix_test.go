package shell

import (
	"io"
	"os"
	"syscall"
	"testing"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }

// waitFIFO blocks until a writer has written to the fifo at path .
func waitFIFO(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	io.ReadAll(f)
}
