package builtin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolpath"
)

// Grep output limits.
const (
	maxGrepOutput    = 30000
	maxGrepLineChars = 1000
)

type grepInput struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	Type       string `json:"type,omitempty"`
	OutputMode string `json:"output_mode,omitempty"`
	IgnoreCase bool   `json:"-i,omitempty"`
	LineNums   *bool  `json:"-n,omitempty"`
	After      int    `json:"-A,omitempty"`
	Before     int    `json:"-B,omitempty"`
	Context    int    `json:"-C,omitempty"`
	Multiline  bool   `json:"multiline,omitempty"`
	HeadLimit  int    `json:"head_limit,omitempty"`
}

const grepSchema = `{"type":"object","properties":{
"pattern":{"type":"string","description":"The regular expression"},
"path":{"type":"string","description":"File or directory to search"},
"glob":{"type":"string","description":"Only files matching this glob (*.js, src/**/*.{ts,tsx})"},
"type":{"type":"string","description":"File type: go, py, js, ts, rust, java, c, cpp, md, json, yaml, ..."},
"output_mode":{"type":"string","enum":["content","files_with_matches","count"]},
"-i":{"type":"boolean","description":"Case insensitive"},
"-n":{"type":"boolean","description":"Line numbers (default true)"},
"-A":{"type":"integer","minimum":0,"description":"Lines after each match"},
"-B":{"type":"integer","minimum":0,"description":"Lines before each match"},
"-C":{"type":"integer","minimum":0,"description":"Lines around each match"},
"multiline":{"type":"boolean","description":"Let patterns span lines; . matches newline"},
"head_limit":{"type":"integer","minimum":0,"description":"Only the first N lines or entries"}},
"required":["pattern"],"additionalProperties":false}`

// fileTypes lists Grep's type names, sorted, with their file-name globs. Both engines use this
// table (ripgrep gets it through --type-add), so they agree on what a type is. A slice, not a
// map: it is laid out by the linker, where a map would be built at every keel start.
var fileTypes = []struct {
	name  string
	globs []string
}{
	{"c", []string{"*.c", "*.h"}},
	{"cpp", []string{"*.cpp", "*.cc", "*.cxx", "*.c++", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"}},
	{"cs", []string{"*.cs"}},
	{"css", []string{"*.css", "*.scss", "*.sass", "*.less"}},
	{"go", []string{"*.go"}},
	{"html", []string{"*.html", "*.htm"}},
	{"java", []string{"*.java"}},
	{"js", []string{"*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"}},
	{"json", []string{"*.json", "*.jsonl"}},
	{"kotlin", []string{"*.kt", "*.kts"}},
	{"md", []string{"*.md", "*.markdown", "*.mdx"}},
	{"php", []string{"*.php"}},
	{"proto", []string{"*.proto"}},
	{"py", []string{"*.py", "*.pyi"}},
	{"rb", []string{"*.rb", "*.gemspec", "Gemfile", "Rakefile"}},
	{"rust", []string{"*.rs"}},
	{"sh", []string{"*.sh", "*.bash", "*.zsh"}},
	{"sql", []string{"*.sql"}},
	{"swift", []string{"*.swift"}},
	{"toml", []string{"*.toml"}},
	{"ts", []string{"*.ts", "*.tsx", "*.mts", "*.cts"}},
	{"txt", []string{"*.txt"}},
	{"xml", []string{"*.xml"}},
	{"yaml", []string{"*.yaml", "*.yml"}},
}

// typeAliases are other names of the types, as [old, new] pairs.
var typeAliases = [][2]string{
	{"python", "py"}, {"javascript", "js"}, {"typescript", "ts"}, {"rs", "rust"}, {"markdown", "md"},
	{"yml", "yaml"}, {"golang", "go"}, {"ruby", "rb"}, {"csharp", "cs"}, {"bash", "sh"}, {"kt", "kotlin"},
}

// typeGlobs returns the globs of a type name or alias.
func typeGlobs(name string) ([]string, bool) {
	for _, a := range typeAliases {
		if a[0] == name {
			name = a[1]
		}
	}
	for _, t := range fileTypes {
		if t.name == name {
			return t.globs, true
		}
	}
	return nil, false
}

// grepQuery is a validated Grep call, the same for both engines.
type grepQuery struct {
	pattern    string
	re         *regexp.Regexp
	root       string
	glob       string
	typeGlobs  []string
	ignoreCase bool
	multiline  bool
	before     int
	after      int
	mode       string
	// hidden is the gate's deny filter (tool.Env.Hidden); nil hides nothing.
	hidden func(path string) bool
}

// Grep returns the Grep tool. engine picks ripgrep or the built-in walker; rgPath names the
// rg binary ("" looks it up on PATH). Read-only and concurrency-safe.
func Grep(engine GrepEngine, rgPath string) tool.Tool {
	return tool.New(tool.Spec[grepInput]{
		Name:              "Grep",
		Description:       description("Grep"),
		Schema:            []byte(grepSchema),
		IsReadOnly:        tool.Always[grepInput],
		IsConcurrencySafe: tool.Always[grepInput],
		Run: func(ctx context.Context, env *tool.Env, in grepInput) tool.Result {
			return runGrep(ctx, env, in, engine, rgPath)
		},
	})
}

func runGrep(ctx context.Context, env *tool.Env, in grepInput, engine GrepEngine, rgPath string) tool.Result {
	q, res, ok := newGrepQuery(env.State, in)
	if !ok {
		return res
	}
	q.hidden = env.Hidden
	lineNums := in.LineNums == nil || *in.LineNums
	// Both engines' results pass the deny rules, and keel never opens a hidden file to search
	// it, whichever engine found it (ripgrep only names the files with a match).
	a := newGrepAnswer(q, in.HeadLimit, func(p string) bool { return q.hidden == nil || !q.hidden(p) })
	var err error
	rg := rgPath
	if engine != GrepBuiltin && rg == "" {
		rg, _ = hostexec.Path("rg")
	}
	switch {
	case engine == GrepRipgrep && rg == "":
		return tool.Errorf("Grep is set to use ripgrep, but rg is not on PATH.")
	case engine != GrepBuiltin && rg != "":
		err = searchRipgrep(ctx, rg, q, a, lineNums)
	default:
		err = searchBuiltin(ctx, q, a, lineNums)
	}
	if err != nil {
		return tool.Errorf("Grep: %v", err)
	}
	return searchResult(env, a.String())
}

func newGrepQuery(st tool.State, in grepInput) (grepQuery, tool.Result, bool) {
	q := grepQuery{pattern: in.Pattern, glob: in.Glob, ignoreCase: in.IgnoreCase, multiline: in.Multiline, mode: in.OutputMode}
	if q.mode == "" {
		q.mode = "files_with_matches"
	}
	// The root is the resolved path, the one the permission check saw; results are listed
	// under it.
	root := toolpath.Resolve(in.Path, st.Cwd, "")
	q.root = root.Real
	if _, err := os.Stat(q.root); err != nil {
		return q, tool.Errorf("Path does not exist: %s.", root.Abs), false
	}
	if in.Type != "" {
		globs, ok := typeGlobs(strings.ToLower(in.Type))
		if !ok {
			names := make([]string, len(fileTypes))
			for i, t := range fileTypes {
				names[i] = t.name
			}
			return q, tool.Errorf("Unknown type %q. Known types: %s. Or use glob.", in.Type, strings.Join(names, ", ")), false
		}
		q.typeGlobs = globs
	}
	flags := "m"
	if q.ignoreCase {
		flags += "i"
	}
	if q.multiline {
		flags += "s"
	}
	re, err := regexp.Compile("(?" + flags + ")" + in.Pattern)
	if err != nil {
		return q, tool.Errorf("Invalid regular expression: %v", err), false
	}
	q.re = re
	if q.mode == "content" {
		q.before, q.after = in.Before, in.After
		if in.Context > 0 {
			q.before, q.after = max(q.before, in.Context), max(q.after, in.Context)
		}
	}
	return q, tool.Result{}, true
}

// truncateLine returns a line as Grep shows it: without a trailing \r, and cut at
// maxGrepLineChars with a note of its length. text is the line, or its first bytes when the
// line is size bytes long (its \r not counted).
func truncateLine(text []byte, size int) string {
	if size == len(text) {
		text = bytes.TrimSuffix(text, []byte("\r"))
		size = len(text)
		if size <= maxGrepLineChars {
			return string(text)
		}
	}
	cut := min(maxGrepLineChars, len(text))
	for cut > 0 && cut < len(text) && !isRuneStart(text[cut]) {
		cut--
	}
	return string(text[:cut]) + fmt.Sprintf("… [line truncated: %d bytes]", size)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
