package session

import (
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// fileWatch tells the FileChanged hooks about changes to the files hooks asked to watch
// (watchPaths in a SessionStart, CwdChanged or FileChanged answer). fsnotify watches each
// file's directory, so a file created after the request is seen too.
type fileWatch struct {
	// mu guards w and files.
	mu    sync.Mutex
	w     *fsnotify.Watcher
	files map[string]bool
	// done is closed when the event goroutine has ended.
	done chan struct{}
}

// watchHooks is what a file watch needs of its session.
type watchHooks struct {
	logger *slog.Logger
	// cwd is what relative paths are relative to.
	cwd func() string
	// changed runs the FileChanged hooks for a change (add, change, unlink) to file, and
	// returns the further files they ask to watch.
	changed func(file, kind string) []string
}

// add adds paths to the watched files, starting the watch on the first.
func (fw *fileWatch) add(paths []string, h watchHooks) {
	if len(paths) == 0 {
		return
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.w == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			h.logger.Warn("file watch unavailable; FileChanged hooks will not fire", "err", err)
			return
		}
		fw.w, fw.files, fw.done = w, map[string]bool{}, make(chan struct{})
		go fw.loop(w, fw.done, h)
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(h.cwd(), p)
		}
		p = filepath.Clean(p)
		if fw.files[p] {
			continue
		}
		if err := fw.w.Add(filepath.Dir(p)); err != nil {
			h.logger.Warn("watch file", "path", p, "err", err)
			continue
		}
		fw.files[p] = true
	}
}

// loop runs the FileChanged hooks for each change to a watched file until the watcher
// closes.
func (fw *fileWatch) loop(w *fsnotify.Watcher, done chan struct{}, h watchHooks) {
	defer close(done)
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			fw.mu.Lock()
			watched := fw.files[filepath.Clean(ev.Name)]
			fw.mu.Unlock()
			if !watched {
				continue
			}
			kind := "change"
			switch {
			case ev.Has(fsnotify.Create):
				kind = "add"
			case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
				kind = "unlink"
			case !ev.Has(fsnotify.Write):
				continue
			}
			fw.add(h.changed(ev.Name, kind), h)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			h.logger.Warn("file watch", "err", err)
		}
	}
}

// close stops the file watch and waits for its goroutine.
func (fw *fileWatch) close() {
	fw.mu.Lock()
	w, done := fw.w, fw.done
	fw.w = nil
	fw.mu.Unlock()
	if w != nil {
		w.Close()
		<-done
	}
}
