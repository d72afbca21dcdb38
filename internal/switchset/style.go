package switchset

import (
	"context"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/outputstyle"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/settings"
)

// OutputStyles lists the styles the main agent can answer in (besides the default).
func (w *Switches) OutputStyles() []outputstyle.Style {
	styles, _ := outputstyle.Load(w.c.StyleDirs)
	return append(styles, w.c.PluginStyles()...)
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

// BuildPrompt builds the main agent's prompt from base with the style called name, which the
// settings named in from. It returns the problems to tell: a style file that did not load,
// a style that does not exist (keel's own prompt is used then).
func (w *Switches) BuildPrompt(base prompt.Options, name, from string) []error {
	styles, errs := outputstyle.Load(w.c.StyleDirs)
	st, ok := outputstyle.Find(styles, name)
	if !ok {
		errs = append(errs, fmt.Errorf("%s: outputStyle %q is not one of %s; answering in the default style",
			from, name, strings.Join(outputstyle.Names(styles), ", ")))
	}
	w.style.mu.Lock()
	w.style.base, w.style.name = base, st.Name
	w.style.mu.Unlock()
	w.c.SetPrompt(withStyle(base, st))
	return errs
}

func withStyle(o prompt.Options, st outputstyle.Style) prompt.Options {
	if st.Name != outputstyle.Default {
		o.OutputStyle, o.KeepCodingInstructions = st.Prompt, st.KeepCodingInstructions
	}
	return o
}

// SetOutputStyle makes the main agent answer in the style called name from the next request
// on, and keeps the choice in the local settings file, as Claude Code's /config does. The
// prompt cache starts over, which the cache watcher is told.
func (w *Switches) SetOutputStyle(ctx context.Context, name string) error {
	styles := w.OutputStyles()
	st, ok := outputstyle.Find(styles, name)
	if !ok {
		return fmt.Errorf("no output style %q; the styles are %s", name, strings.Join(outputstyle.Names(styles), ", "))
	}
	release, err := w.c.Acquire()
	if err != nil {
		return err
	}
	defer release()
	w.style.mu.Lock()
	base := w.style.base
	w.style.name = st.Name
	w.style.mu.Unlock()
	w.c.SetPrompt(withStyle(base, st))
	w.c.Announce("output style")
	return settings.UpdateFile(w.c.LocalSettings, func(doc map[string]any) error {
		if st.Name == outputstyle.Default {
			delete(doc, "outputStyle")
		} else {
			doc["outputStyle"] = st.Name
		}
		return nil
	})
}
