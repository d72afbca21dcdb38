package session

import (
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/permission"
)

// openAutoMemory opens the project's auto memory ($KEEL_HOME/projects/<root>/memory) unless
// the settings switch it off ("autoMemoryEnabled": false) or the session has no keel
// directory, and grants the main agent Read, Write and Edit there: the notes are the
// model's own, so keeping them never asks (deny rules still win, Bash is judged as
// anywhere). A directory keel cannot create or write leaves auto memory out with a notice to
// the user and a line in the prompt for the model; nothing is granted then.
func (i *Inspector) openAutoMemory() {
	s := i.s
	if s.opts.Home == "" || !s.settings.AutoMemoryOn() {
		return
	}
	fail := func(err error) {
		i.autoMem.problem = err.Error()
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: err.Error()})
	}
	a, err := memory.OpenAuto(memory.AutoDir(s.opts.Home, s.opts.Cwd))
	if err != nil {
		fail(err)
		return
	}
	rules, err := permission.DirectoryRules(a.Dir, permission.Source{Name: "auto memory", Dir: a.Dir})
	if err != nil {
		fail(err)
		return
	}
	s.checker.Grant(rules...)
	i.autoMem.dir = a
}

// AutoMemoryDir returns the project's auto memory directory, "" when auto memory is off or
// unavailable.
func (i *Inspector) AutoMemoryDir() string {
	if i.autoMem.dir == nil {
		return ""
	}
	return i.autoMem.dir.Dir
}

// autoMemoryFile is the auto memory's index as a memory file, as it is on disk now (the
// prompt keeps the head it had at the session's start), for /memory and the context usage.
func (i *Inspector) autoMemoryFile() (memory.File, bool) {
	if i.autoMem.dir == nil {
		return memory.File{}, false
	}
	path := filepath.Join(i.autoMem.dir.Dir, memory.AutoIndexName)
	f := memory.File{Path: path, Display: path, Kind: memory.KindAuto}
	idx, err := i.autoMem.dir.ReadIndex()
	if err == nil {
		f.Content, f.Truncated = idx.Text, idx.Truncated
	}
	if st, err := os.Stat(path); err == nil {
		f.Size = st.Size()
	}
	return f, true
}
