package sandbox_test

import (
	"os"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Dispatch(os.Args)
	os.Exit(m.Run())
}
