package builtin

import (
	"os"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestMain lets this test binary serve as the sandbox's helper for the sandboxed Bash tests.
func TestMain(m *testing.M) {
	sandbox.Dispatch(os.Args)
	os.Exit(m.Run())
}
