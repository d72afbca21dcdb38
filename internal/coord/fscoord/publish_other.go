//go:build !linux

package fscoord

import (
	"errors"
	"os"
)

func openUnnamed(string) (*os.File, bool) { return nil, false }

func linkUnnamed(*os.File, string) error { return errors.ErrUnsupported }
