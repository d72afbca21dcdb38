package mcphost

import (
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// pythonName matches the base names of Python's interpreters: python, python3, python3.12,
// python3.13t, python3.12-dbg.
var pythonName = lazy.Regexp{Expr: `^python[0-9.]*(t|d|m|-dbg)?(\.exe)?$`}

// pythonRun is what keel reads of a command line that starts Python, as Python and a leading
// env read it.
type pythonRun struct {
	// at is the index, in the command line, of the interpreter's word.
	at int
	// dir is the directory Python starts in (env -C moves it), relative ones joined to the
	// server's.
	dir string
	// module is what -m names; script says a file (or directory, or zip) runs, whose own
	// directory Python puts first on sys.path in place of the working directory.
	module string
	script bool
	// safe says -P or -I leaves the working directory off already; ignoresEnv says -E
	// makes Python ignore PYTHONSAFEPATH.
	safe, ignoresEnv bool
	// cleared says env starts Python without the server's environment (-i, or -u
	// PYTHONSAFEPATH); assigned, that an env assignment sets PYTHONSAFEPATH itself.
	cleared, assigned bool
}

// parsePython reads argv (the command and its arguments), started in dir, as a Python
// command line, looking through env [options] [NAME=VALUE…] and `uv run`. ok is false when
// what runs is not Python, or keel cannot tell.
func parsePython(argv []string, dir string) (pythonRun, bool) {
	run := pythonRun{dir: dir}
	i := 0
	for i < len(argv) {
		switch base := filepath.Base(argv[i]); {
		case base == "env":
			next, ok := run.skipEnv(argv, i+1)
			if !ok {
				return pythonRun{}, false
			}
			i = next
		case base == "uv" && i+2 < len(argv) && argv[i+1] == "run" && pythonName.Get().MatchString(filepath.Base(argv[i+2])):
			i += 2 // `uv run python …` only: uv's own options are many
		case pythonName.Get().MatchString(base):
			run.at = i
			run.options(argv[i+1:])
			return run, true
		default:
			return pythonRun{}, false
		}
	}
	return pythonRun{}, false
}

// skipEnv reads env's options and assignments from argv[i:] and returns the index of the
// command it runs; ok is false for an option keel does not follow (-S splits a string into
// the command line).
func (run *pythonRun) skipEnv(argv []string, i int) (int, bool) {
	valued := func(a string) (name, value string, takesNext bool) {
		for _, o := range []string{"-u", "--unset", "-C", "--chdir", "-a", "--argv0"} {
			switch {
			case a == o:
				return o, "", true
			case strings.HasPrefix(o, "--") && strings.HasPrefix(a, o+"="):
				return o, a[len(o)+1:], false
			case !strings.HasPrefix(o, "--") && strings.HasPrefix(a, o) && !strings.HasPrefix(a, "--"):
				return o, a[len(o):], false
			}
		}
		return "", "", false
	}
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			i++
			for i < len(argv) && strings.Contains(argv[i], "=") {
				run.assign(argv[i])
				i++
			}
			return i, true
		case a == "-S" || strings.HasPrefix(a, "-S") || strings.HasPrefix(a, "--split-string"):
			return 0, false
		case a == "-i" || a == "--ignore-environment" || a == "-":
			run.cleared = true
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 2 && strings.Trim(a[1:], "0iv") == "":
			run.cleared = run.cleared || strings.Contains(a, "i") // -iv, -0i
		case strings.HasPrefix(a, "-"):
			name, value, takesNext := valued(a)
			if takesNext {
				if i++; i >= len(argv) {
					return 0, false
				}
				value = argv[i]
			}
			switch name {
			case "-u", "--unset":
				run.cleared = run.cleared || value == "PYTHONSAFEPATH"
			case "-C", "--chdir":
				if !filepath.IsAbs(value) {
					value = filepath.Join(run.dir, value)
				}
				run.dir = value
			}
		case strings.Contains(a, "="):
			run.assign(a)
		default:
			return i, true
		}
	}
	return i, false
}

// assign notes env's NAME=VALUE.
func (run *pythonRun) assign(a string) {
	if name, _, _ := strings.Cut(a, "="); name == "PYTHONSAFEPATH" {
		run.assigned = true
	}
}

// options reads the interpreter's arguments as CPython's getopt does: single-letter
// options, clustered (-bb, -uE), of which -c, -m, -W and -X take a value, joined (-Wignore,
// -mpkg) or as the next word, and -c and -m end the options; --check-hash-based-pycs takes the
// next word; the first word that is no option (or follows --) is the script, "-" standard input.
func (run *pythonRun) options(args []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			run.script = i+1 < len(args) && args[i+1] != "-"
			return
		case a == "-" || !strings.HasPrefix(a, "-"):
			run.script = a != "-"
			return
		case a == "--check-hash-based-pycs":
			i++
			continue
		case strings.HasPrefix(a, "--"):
			continue // --help, --version…: Python prints and exits
		}
		for j := 1; j < len(a); j++ {
			switch c := a[j]; c {
			case 'c', 'm', 'W', 'X':
				value := a[j+1:]
				if value == "" && i+1 < len(args) {
					i++
					value = args[i]
				}
				switch c {
				case 'c':
					return
				case 'm':
					run.module = value
					return
				}
				j = len(a)
			case 'P', 'I':
				run.safe = true
			case 'E':
				run.ignoresEnv = true
			}
		}
	}
}
