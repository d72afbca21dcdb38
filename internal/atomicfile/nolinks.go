package atomicfile

import "errors"

// ErrNotRegular is ChmodBeneath's answer for a name that holds no regular file.
var ErrNotRegular = errors.New("not a regular file")

// LinkError reports a symbolic link where WriteNoLinks or RemoveNoLinks met a directory on the
// way to their file: they leave the file alone, since whoever put the link there chooses where
// the write or the removal would land.
type LinkError struct {
	// Link is the path of the link, the file's path up to it.
	Link string
}

func (e *LinkError) Error() string { return "a link on the way (" + e.Link + ")" }
