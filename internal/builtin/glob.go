package builtin

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolpath"
)

// hidden reports whether the gate's deny and ask rules keep a found file out of search results.
func hidden(env *tool.Env, path string) bool { return env.Hidden != nil && env.Hidden(path) }

// searchResult is a search's text with the gate's note on what it left out that the model
// may still ask for (files an ask rule covers).
func searchResult(env *tool.Env, text string) tool.Result {
	if env.HiddenNote != nil {
		if note := env.HiddenNote(); note != "" {
			text += "\n" + note
		}
	}
	return tool.Text(text)
}

// maxGlobResults caps the paths Glob returns.
const maxGlobResults = 100

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
}

const globSchema = `{"type":"object","properties":{
"pattern":{"type":"string","description":"The glob pattern"},
"path":{"type":"string","description":"Directory to search in"}},
"required":["pattern"],"additionalProperties":false}`

// Glob returns the Glob tool: files matching a doublestar pattern, .gitignore respected,
// newest first. Read-only and concurrency-safe.
func Glob() tool.Tool {
	return tool.New(tool.Spec[globInput]{
		Name:              "Glob",
		Description:       description("Glob"),
		Schema:            []byte(globSchema),
		IsReadOnly:        tool.Always[globInput],
		IsConcurrencySafe: tool.Always[globInput],
		Run:               runGlob,
	})
}

func runGlob(ctx context.Context, env *tool.Env, in globInput) tool.Result {
	// The pattern's literal base is part of the root, so the walk starts at the directory
	// the permission check saw: "/etc/**", "~/.ssh/*" and "../x/*" search there.
	rootPath, pattern := toolpath.GlobRoot(in.Pattern, in.Path, env.State.Cwd, "")
	root := rootPath.Real
	if !doublestar.ValidatePattern(pattern) {
		return tool.Errorf("Invalid glob pattern %q.", in.Pattern)
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		return tool.Errorf("%s is not a directory.", rootPath.Abs)
	}
	var newest newestHits
	err := walkFiles(ctx, root, func(p string, _ *atomicfile.Dir, d fs.DirEntry) {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return
		}
		if ok, _ := doublestar.Match(pattern, filepath.ToSlash(rel)); ok && !hidden(env, p) {
			// d.Info looks the name up in its held directory: a link swapped in is not listed.
			if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
				newest.add(hit{p, info.ModTime()})
			}
		}
	})
	if err != nil {
		return tool.Errorf("Glob in %s: %v", root, err)
	}
	if newest.total == 0 {
		return searchResult(env, "No files found.")
	}
	var b strings.Builder
	for _, h := range newest.hits {
		b.WriteString(h.path)
		b.WriteByte('\n')
	}
	if left := newest.total - len(newest.hits); left > 0 {
		fmt.Fprintf(&b, "[%d more files not shown (%d matched). Use a narrower pattern or path.]\n", left, newest.total)
	}
	return searchResult(env, strings.TrimSuffix(b.String(), "\n"))
}

type hit struct {
	path  string
	mtime time.Time
}

// newestHits keeps the maxGlobResults newest of the files Glob finds, in the order it shows
// them (newest first, then by path), and counts the rest: memory stays bounded by the answer
// however many files match.
type newestHits struct {
	hits  []hit
	total int
}

func (n *newestHits) add(h hit) {
	n.total++
	i, _ := slices.BinarySearchFunc(n.hits, h, compareHits)
	if i == maxGlobResults {
		return
	}
	if len(n.hits) == maxGlobResults {
		n.hits = n.hits[:maxGlobResults-1]
	}
	n.hits = slices.Insert(n.hits, i, h)
}

// compareHits orders newest first, then by path.
func compareHits(a, b hit) int {
	if c := b.mtime.Compare(a.mtime); c != 0 {
		return c
	}
	return strings.Compare(a.path, b.path)
}
