package session

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The package's files stand in floors: type-checked, no file uses a name declared in a file
// that, through its own uses, comes back to it. A part that reaches back into the session
// through a file above it would make such a cycle; it has to move into a package of its own
// or below. (A reading by tokens would count names that only look alike.)
func TestFilesStandInFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package from its dependencies' export data")
	}
	uses := fileUses(t)
	if cycle := findCycle(uses); cycle != nil {
		t.Errorf("files of internal/session use each other in a cycle: %s", strings.Join(cycle, " → "))
	}
}

// fileUses type-checks the package's non-test files and returns, for each file, the other
// files declaring a name it uses.
func fileUses(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok {
			exports[path] = file
		}
	}
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if f, ok := exports[path]; ok && f != "" {
			return os.Open(f)
		}
		return nil, fmt.Errorf("no export data for %s", path)
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: imp}).Check("github.com/keel-dev/keel/internal/session", fset, files, info)
	if err != nil {
		t.Fatalf("type-checking internal/session: %v", err)
	}
	edges := map[string]map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() || obj.Parent() != nil && obj.Parent() != pkg.Scope() && !isField(obj) {
			continue
		}
		from, to := fset.Position(id.Pos()).Filename, fset.Position(obj.Pos()).Filename
		if from == to {
			continue
		}
		if edges[from] == nil {
			edges[from] = map[string]bool{}
		}
		edges[from][to] = true
	}
	uses := map[string][]string{}
	for from, tos := range edges {
		for to := range tos {
			uses[from] = append(uses[from], to)
		}
		slices.Sort(uses[from])
	}
	return uses
}

// isField says obj is a field or method: they have no parent scope but belong to the file
// declaring their type.
func isField(obj types.Object) bool {
	switch o := obj.(type) {
	case *types.Var:
		return o.IsField()
	case *types.Func:
		return o.Signature().Recv() != nil
	}
	return false
}

// findCycle returns one cycle of the graph, its first file repeated at the end, or nil.
func findCycle(g map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = open
		stack = append(stack, n)
		for _, m := range g[n] {
			switch state[m] {
			case open:
				return append(slices.Clone(stack[slices.Index(stack, m):]), m)
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return nil
	}
	nodes := make([]string, 0, len(g))
	for n := range g {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		if state[n] == unseen {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}
