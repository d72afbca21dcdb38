package cli_test

import (
	"os"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestMain lets this test binary serve as the sandbox's helper for keel sandbox's tests.
func TestMain(m *testing.M) {
	sandbox.Dispatch(os.Args)
	os.Exit(m.Run())
}
