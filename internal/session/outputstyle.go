package session

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/outputstyle"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/settingsedit"
)

// styleDirs are where output style files are found: the user's (keel's home, then
// ~/.claude), then the project's (.claude, then .keel); a later one wins by name.
func (w *Switches) styleDirs() []outputstyle.Dir {
	s := w.s
	var dirs []outputstyle.Dir
	if home := userHome(); home != "" {
		dirs = append(dirs, outputstyle.Dir{Path: filepath.Join(home, ".claude", "output-styles")})
	}
	if s.opts.Home != "" {
		dirs = append(dirs, outputstyle.Dir{Path: filepath.Join(s.opts.Home, "output-styles")})
	}
	return append(dirs, outputstyle.Dir{Path: filepath.Join(s.projectDir, ".claude", "output-styles")},
		outputstyle.Dir{Path: filepath.Join(s.projectDir, ".keel", "output-styles")})
}

// OutputStyles lists the styles this session can answer in (besides the default).
func (w *Switches) OutputStyles() []outputstyle.Style {
	s := w.s
	styles, _ := outputstyle.Load(w.styleDirs())
	return append(styles, s.plug.OutputStyles()...)
}

// OutputStyle is the name of the style in use ("default" for keel's own).
func (w *Switches) OutputStyle() string {
	w.style.mu.Lock()
	defer w.style.mu.Unlock()
	if w.style.name == "" {
		return outputstyle.Default
	}
	return w.style.name
}

// buildStyledPrompt builds the main agent's prompt from base with the style the settings
// name; a style that does not exist is a notice, and keel's own prompt is used.
func (w *Switches) buildStyledPrompt(base prompt.Options) {
	s := w.s
	name := s.settings.OutputStyle.V
	styles, errs := outputstyle.Load(w.styleDirs())
	for _, err := range errs {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: err.Error()})
	}
	st, ok := outputstyle.Find(styles, name)
	if !ok {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: fmt.Sprintf("%s: outputStyle %q is not one of %s; answering in the default style",
			s.settings.OutputStyle.From, name, strings.Join(outputstyle.Names(styles), ", "))})
	}
	w.style.mu.Lock()
	w.style.base, w.style.name = base, st.Name
	w.style.mu.Unlock()
	s.prompt = prompt.New(withStyle(base, st))
}

func withStyle(o prompt.Options, st outputstyle.Style) prompt.Options {
	if st.Name != outputstyle.Default {
		o.OutputStyle, o.KeepCodingInstructions = st.Prompt, st.KeepCodingInstructions
	}
	return o
}

// SetOutputStyle makes the main agent answer in the style called name from the next request
// on, and keeps the choice in the project's local settings (.keel/settings.local.json), as
// Claude Code's /config does. The prompt cache starts over, which the cache watcher is told.
func (w *Switches) SetOutputStyle(ctx context.Context, name string) error {
	s := w.s
	styles := w.OutputStyles()
	st, ok := outputstyle.Find(styles, name)
	if !ok {
		return fmt.Errorf("no output style %q; the styles are %s", name, strings.Join(outputstyle.Names(styles), ", "))
	}
	if !s.acquire() {
		return ErrBusy
	}
	defer s.release()
	w.style.mu.Lock()
	base := w.style.base
	w.style.name = st.Name
	w.style.mu.Unlock()
	s.prompt = prompt.New(withStyle(base, st))
	s.watch.Announce("output style")
	path := settingsedit.File(permission.DestinationLocalSettings, s.projectDir, s.opts.Home)
	return settings.UpdateFile(path, func(doc map[string]any) error {
		if st.Name == outputstyle.Default {
			delete(doc, "outputStyle")
		} else {
			doc["outputStyle"] = st.Name
		}
		return nil
	})
}
