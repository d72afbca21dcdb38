package shell

import "time"

// Info is a background shell as a listing shows it (the terminal UI's /bashes): its output
// is left for the next Read.
type Info struct {
	ID, Command string
	Status      Status
	ExitCode    int
	Started     time.Time
	// Unread is the size of the output not read yet, in bytes.
	Unread int
}

// List describes every job, oldest first, without consuming its output.
func (j *Jobs) List() []Info {
	var out []Info
	for _, id := range j.IDs() {
		jb, err := j.get(id)
		if err != nil {
			continue
		}
		jb.mu.Lock()
		out = append(out, Info{ID: jb.id, Command: jb.command, Status: jb.status, ExitCode: jb.exitCode, Started: jb.started, Unread: len(jb.unread)})
		jb.mu.Unlock()
	}
	return out
}
