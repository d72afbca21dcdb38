package session

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/keel-dev/keel/internal/hooks"
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

// watch adds paths (relative ones to the session's directory) to the watched files.
func (s *Session) watchFiles(paths []string) {
	if len(paths) == 0 {
		return
	}
	fw := &s.watched
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.w == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			s.logger.Warn("file watch unavailable; FileChanged hooks will not fire", "err", err)
			return
		}
		fw.w, fw.files, fw.done = w, map[string]bool{}, make(chan struct{})
		go s.watchLoop(w, fw.done)
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.Cwd(), p)
		}
		p = filepath.Clean(p)
		if fw.files[p] {
			continue
		}
		if err := fw.w.Add(filepath.Dir(p)); err != nil {
			s.logger.Warn("watch file", "path", p, "err", err)
			continue
		}
		fw.files[p] = true
	}
}

// watchLoop runs the FileChanged hooks for each change to a watched file until the watcher
// closes.
func (s *Session) watchLoop(w *fsnotify.Watcher, done chan struct{}) {
	defer close(done)
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			s.watched.mu.Lock()
			watched := s.watched.files[filepath.Clean(ev.Name)]
			s.watched.mu.Unlock()
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
			out := s.hooks.Run(context.Background(), hooks.FileChanged, s.hookInput(s.Cwd(), hooks.Input{Extra: map[string]any{"file_path": ev.Name, "event": kind}}))
			s.watchFiles(out.WatchPaths)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			s.logger.Warn("file watch", "err", err)
		}
	}
}

// closeWatch stops the file watch and waits for its goroutine.
func (s *Session) closeWatch() {
	fw := &s.watched
	fw.mu.Lock()
	w, done := fw.w, fw.done
	fw.w = nil
	fw.mu.Unlock()
	if w != nil {
		w.Close()
		<-done
	}
}
