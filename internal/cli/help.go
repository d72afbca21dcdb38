package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/keel-dev/keel/internal/editdist"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// rootLong is the first thing `keel --help` says: what plain keel does and what it needs.
const rootLong = `keel is a coding agent: it sends your conversation to a model, runs the tools the model asks
for (read, edit, run commands…), asking you first where the rules say so, and feeds the results
back until the work is done.

  keel                 open the terminal UI in this directory (the keel-tui binary, installed
                       beside keel); keel "PROMPT" opens it with a first prompt
  keel -p "PROMPT"     one headless run: the answer on stdout, denied calls and retries on stderr
  keel --continue      continue this directory's newest conversation (--resume: pick one)
  keel demo            a whole session offline against the built-in scripted model, no key needed

It needs a model API:
  ANTHROPIC_API_KEY      Anthropic's API (or ANTHROPIC_AUTH_TOKEN for a bearer-token gateway)
  ANTHROPIC_BASE_URL     another address of a Messages API (a proxy, keel scripted)
  ANTHROPIC_MODEL        the model (default: the newest opus; keel models lists them)
  OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL
                         with --provider openai: an OpenAI-compatible server (Ollama, vLLM…)
  KEEL_HOME              keel's own directory: sessions, trust, logs (default ~/.keel)

Settings are Claude Code's (.claude/settings.json, ~/.claude/settings.json, .keel/…): keel config
shows what applies and where each value comes from.

Exit status of keel -p: 0 done, 1 the run failed, 2 keel was called wrongly, 3 the run finished but
some of the model's calls were denied.`

// sessionFlag marks the flags every session-opening command shares (runFlags): a
// subcommand's help lists its own flags and names these in one line.
const sessionFlag = "keel-session-flag"

// markSessionFlags marks the flags of fl that are not in before as session flags.
func markSessionFlags(fl *pflag.FlagSet, before map[string]bool) {
	fl.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			_ = fl.SetAnnotation(f.Name, sessionFlag, []string{"true"})
		}
	})
}

// flagNames is the set of fl's flag names.
func flagNames(fl *pflag.FlagSet) map[string]bool {
	names := map[string]bool{}
	fl.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	return names
}

// ownFlagsHelp makes the help of cmd, a subcommand that opens a session, list only its own
// flags and name the session flags it shares with keel in one line: `keel worker --help`
// would otherwise list some fifty flags before its own three.
func ownFlagsHelp(cmd *cobra.Command) {
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		own := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Annotations[sessionFlag] == nil && !f.Hidden {
				own.AddFlag(f)
			}
		})
		text := c.Long
		if text == "" {
			text = c.Short
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n\nUsage:\n  %s\n\nFlags:\n%s\n", strings.TrimSpace(text), c.UseLine(), own.FlagUsages())
		b.WriteString("Session flags: keel's flags for the session it opens apply too (--model, --permission-mode,\n" +
			"--allowedTools, --disallowedTools, --add-dir, --cwd, --settings, --mcp-config…); keel --help lists them.\n")
		fmt.Fprint(c.OutOrStdout(), b.String())
	})
}

// flagError is every command's answer to a flag pflag refused: the error with the nearest
// flag the command has, and where its flags are listed.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		if s := nearest(name, names); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return usageError{fmt.Errorf("%s (%s --help lists the flags)", msg, c.CommandPath())}
}

// guardSubcommands makes every command that only groups others refuse an unknown
// subcommand with the nearest ones, where cobra prints the group's help and exits 0.
func guardSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		guardSubcommands(sub)
	}
	if !c.HasParent() || !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		cmd.SuggestionsMinimumDistance = 2
		return usageError{fmt.Errorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), didYouMean(cmd.CommandPath(), cmd.SuggestionsFor(args[0])))}
	}
}

func didYouMean(path string, names []string) string {
	if len(names) == 0 {
		return fmt.Sprintf(" (%s --help lists them)", path)
	}
	return fmt.Sprintf("; did you mean %s %s?", path, strings.Join(names, " or "+path+" "))
}

// commandTypo is the error for plain `keel WORD` where WORD is one or two letters away from a
// command (keel sesions): as a prompt it would open the terminal UI on a typo. `keel -- WORD`
// or -p sends it as a prompt.
func commandTypo(root *cobra.Command, args []string) error {
	if len(args) != 1 || root.ArgsLenAtDash() >= 0 {
		return nil
	}
	word := args[0]
	for _, r := range word {
		if (r < 'a' || r > 'z') && r != '-' {
			return nil
		}
	}
	var names []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	s := nearest(word, names)
	if s == "" {
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q; did you mean keel %s? (to send it to the model as a prompt: keel -- %s)", word, s, word)}
}

// nearest is the name closest to s: the same letters in another case or without dashes and
// underscores (--allowed_tools), else one edit away (two for names of six letters or more);
// "" when none is that close.
func nearest(s string, names []string) string {
	fold := func(x string) string {
		return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(x))
	}
	for _, n := range names {
		if n != s && fold(n) == fold(s) {
			return n
		}
	}
	best, bestD := "", 0
	for _, n := range names {
		limit := 1
		if len(n) >= 6 {
			limit = 2
		}
		if d := editdist.Distance(strings.ToLower(s), strings.ToLower(n)); d > 0 && d <= limit && (best == "" || d < bestD) {
			best, bestD = n, d
		}
	}
	return best
}

// checkNamedFiles refuses a run whose flags name a file or folder that is not there: a
// missing --mcp-config would otherwise run without its servers, a missing --add-dir without
// the directory, as a missing --settings already stops keel.
func (f *runFlags) checkNamedFiles() error {
	check := func(flag, path string) error {
		if _, err := os.Stat(path); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return usageError{fmt.Errorf("%s %s: no such file or folder", flag, path)}
			}
			return usageError{fmt.Errorf("%s %s: %w", flag, path, err)}
		}
		return nil
	}
	for _, v := range f.mcp.configs {
		if strings.HasPrefix(strings.TrimSpace(v), "{") {
			continue // JSON text
		}
		if err := check("--mcp-config", v); err != nil {
			return err
		}
	}
	// A --plugin-dir that is not there is one of the run's plugin errors instead (the init
	// line's plugin_errors, as the Agent SDK expects), so it is not checked here.
	for _, p := range f.addDirs {
		if err := check("--add-dir", p); err != nil {
			return err
		}
	}
	return nil
}
