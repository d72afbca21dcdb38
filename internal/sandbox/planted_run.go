//go:build linux || darwin

package sandbox

// Planted says, once the run is released, which submodules the command added to a protected
// repository with a repository of its own making (see [plantWatch]), as sentences for the
// command's result; nil when none.
func (r *Run) Planted() []string {
	if r == nil {
		return nil
	}
	return r.planted.found
}
