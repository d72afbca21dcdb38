package inspect

import (
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/permission"
)

// OpenAutoMemory opens the project's auto memory ($KEEL_HOME/projects/<root>/memory) unless
// the settings switch it off ("autoMemoryEnabled": false) or the session has no keel
// directory, and grants the main agent Read, Write and Edit there: the notes are the
// model's own, so keeping them never asks (deny rules still win, Bash is judged as
// anywhere). A directory keel cannot create or write leaves auto memory out with a warning to
// the user and a problem for the prompt to tell the model; nothing is granted then. It runs
// once, while the session opens, before the prompt is built.
func (i *Inspector) OpenAutoMemory() {
	if i.c.Home == "" || (i.c.AutoMemoryOn != nil && !i.c.AutoMemoryOn()) {
		return
	}
	fail := func(err error) {
		i.problem = err.Error()
		if i.c.Warn != nil {
			i.c.Warn(err.Error())
		}
	}
	a, err := memory.OpenAuto(memory.AutoDir(i.c.Home, i.c.Cwd))
	if err != nil {
		fail(err)
		return
	}
	rules, err := permission.DirectoryRules(a.Dir, permission.Source{Name: "auto memory", Dir: a.Dir})
	if err != nil {
		fail(err)
		return
	}
	if i.c.Grant != nil {
		i.c.Grant(rules...)
	}
	i.auto = a
}

// AutoMemory is the open auto memory (nil when off or unavailable) and why it is
// unavailable ("" when it is open or simply off), for the prompt.
func (i *Inspector) AutoMemory() (dir *memory.Auto, problem string) { return i.auto, i.problem }

// AutoMemoryDir returns the project's auto memory directory, "" when auto memory is off or
// unavailable.
func (i *Inspector) AutoMemoryDir() string {
	if i.auto == nil {
		return ""
	}
	return i.auto.Dir
}

// autoMemoryFile is the auto memory's index as a memory file, as it is on disk now (the
// prompt keeps the head it had at the session's start), for /memory and the context usage.
func (i *Inspector) autoMemoryFile() (memory.File, bool) {
	if i.auto == nil {
		return memory.File{}, false
	}
	path := filepath.Join(i.auto.Dir, memory.AutoIndexName)
	f := memory.File{Path: path, Display: path, Kind: memory.KindAuto}
	idx, err := i.auto.ReadIndex()
	if err == nil {
		f.Content, f.Truncated = idx.Text, idx.Truncated
	}
	if st, err := os.Stat(path); err == nil {
		f.Size = st.Size()
	}
	return f, true
}
