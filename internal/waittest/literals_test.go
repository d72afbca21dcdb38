package waittest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// durationUnits are the time package's units, as a test writes a literal duration.
var durationUnits = map[string]time.Duration{
	"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
	"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
}

// literalBound is where a literal duration stops being a risk: a limit this long is only
// reached when something is already wrong (the suite's own base is 30 s), so writing it
// as a constant cannot make a working test fail on a loaded machine.
const literalBound = time.Minute

// literalMark on the line of a literal duration, or the line above it or above the statement
// holding it, says why it is not a
// limit on real work (a value compared, a fake clock's step, a pace that is not waited on);
// the reason is required.
const literalMark = "//keel:duration "

// TestNoLiteralDurationsInTests finds durations in tests that bypass the suite's time base:
// a literal shorter than a minute (300*time.Millisecond) that limits real work (see
// isLimit) outside waittest.Scale and outside a synctest bubble (whose clock is fake). Such
// a constant is what made a fake language server miss
// its start-up window under load and a test see a slow start instead of a hung server.
func TestNoLiteralDurationsInTests(t *testing.T) {
	root := moduleRoot(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		// The time base's own tests compare its values.
		if !strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == filepath.Join(root, "internal", "waittest") {
			return nil
		}
		hits, err := literalDurations(path)
		if err != nil {
			return err
		}
		for _, h := range hits {
			rel, _ := filepath.Rel(root, h)
			found = append(found, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("%d literal durations in tests bypass the time base: derive them from waittest (Scale, Timeout), "+
			"run them in a synctest bubble, or say why they are not a limit with %q on the line:\n%s",
			len(found), strings.TrimSpace(literalMark)+" <reason>", strings.Join(found, "\n"))
	}
}

// literalDurations returns the positions (file:line: text) of the literal durations in the
// test file at path that the check refuses.
func literalDurations(path string) ([]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	marked := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, literalMark) && strings.TrimSpace(strings.TrimPrefix(c.Text, literalMark)) != "" {
				line := fset.Position(c.Pos()).Line
				marked[line], marked[line+1] = true, true
			}
		}
	}
	// A mark above a statement or an element spanning lines covers all of it.
	ast.Inspect(f, func(n ast.Node) bool {
		switch n.(type) {
		case ast.Stmt, *ast.KeyValueExpr, *ast.CompositeLit:
			start, end := fset.Position(n.Pos()).Line, fset.Position(n.End()).Line
			if marked[start] {
				for l := start; l <= end; l++ {
					marked[l] = true
				}
			}
		}
		return true
	})
	var hits []string
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		d, ok := literalDuration(e)
		if !ok {
			return true
		}
		line := fset.Position(e.Pos()).Line
		if d < literalBound && !marked[line] && isLimit(stack[:len(stack)-1]) {
			hits = append(hits, fmt.Sprintf("%s:%d: %s", path, line, src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset]))
		}
		return false // its parts are not literals of their own
	})
	return hits, nil
}

// literalDuration reports the value of e when it is a literal duration: time.Unit, or a
// number literal times one.
func literalDuration(e ast.Expr) (time.Duration, bool) {
	if u, ok := timeUnit(e); ok {
		return u, true
	}
	b, ok := e.(*ast.BinaryExpr)
	if !ok || b.Op != token.MUL {
		return 0, false
	}
	for _, pair := range [][2]ast.Expr{{b.X, b.Y}, {b.Y, b.X}} {
		u, ok := timeUnit(pair[1])
		lit, isLit := ast.Unparen(pair[0]).(*ast.BasicLit)
		if !ok || !isLit {
			continue
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(lit.Value, "_", ""), 64)
		if err != nil {
			return 0, false
		}
		return time.Duration(v * float64(u)), true
	}
	return 0, false
}

func timeUnit(e ast.Expr) (time.Duration, bool) {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return 0, false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || pkg.Name != "time" {
		return 0, false
	}
	u, ok := durationUnits[sel.Sel.Name]
	return u, ok
}

// waitCalls take a duration that limits or paces real work.
var waitCalls = map[string]bool{
	"time.Sleep": true, "time.After": true, "time.NewTimer": true, "time.NewTicker": true, "time.Tick": true,
	"time.AfterFunc": true, "context.WithTimeout": true, "context.WithTimeoutCause": true, "context.WithDeadline": true,
}

// limitName matches the names a limit on real work goes by: a field, a variable or a
// constant a literal is given to.
var limitName = regexp.MustCompile(`(?i)timeout|deadline|grace|lease|wait|delay|limit|window|every|interval`)

// isLimit says whether a literal duration under these ancestors (nearest last) limits real
// work: it reaches a wait (time.Sleep, a timer, context.WithTimeout) or a field, variable or
// constant named as a limit (StartupTimeout: 300*time.Millisecond, const lease = 2*time.Second).
// A literal derived from the time base, on a synctest bubble's fake clock, or in a time
// value's arithmetic (now.Add(-d), clk.Add(d)) is not one; nor is a value a table compares.
func isLimit(ancestors []ast.Node) bool {
	for _, a := range ancestors {
		if call, ok := a.(*ast.CallExpr); ok {
			if pkg, _ := callName(call); pkg == "waittest" || pkg == "synctest" {
				return false
			}
		}
	}
	for i := len(ancestors) - 1; i >= 0; i-- {
		switch a := ancestors[i].(type) {
		case *ast.BinaryExpr, *ast.ParenExpr, *ast.UnaryExpr:
			continue // arithmetic on the literal: look at where the result goes
		case *ast.CallExpr:
			pkg, name := callName(a)
			switch {
			case waitCalls[pkg+"."+name]:
				return true
			case pkg == "time" && name == "Duration":
				continue
			}
			return false // a time value's arithmetic, or an argument whose name is not known here
		case *ast.KeyValueExpr:
			k, ok := a.Key.(*ast.Ident)
			return ok && limitName.MatchString(k.Name)
		case *ast.AssignStmt:
			for _, l := range a.Lhs {
				if limitName.MatchString(exprName(l)) {
					return true
				}
			}
			return false
		case *ast.ValueSpec:
			for _, n := range a.Names {
				if limitName.MatchString(n.Name) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// callName returns a call's package or receiver name and its function name.
func callName(call *ast.CallExpr) (string, string) {
	switch f := call.Fun.(type) {
	case *ast.SelectorExpr:
		return exprName(f.X), f.Sel.Name
	case *ast.Ident:
		return "", f.Name
	}
	return "", ""
}

// exprName is the last name of an identifier or selector (c.StartupTimeout: StartupTimeout).
func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// The check refuses the constants that made tests flake and lets through what is not a limit.
func TestLiteralDurationsFound(t *testing.T) {
	src := `package x

func f() {
	c.StartupTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	opts := Options{Lease: time.Second}
	const lease = 500 * time.Millisecond
	time.Sleep(10 * time.Millisecond)
	c.StartupTimeout = waittest.Scale(300 * time.Millisecond)
	old := now.Add(-time.Hour)
	want := []time.Duration{time.Second, 2 * time.Second}
	opts = Options{Lease: time.Minute}
	//keel:duration meant to pass
	c.ToolTimeout = 200 * time.Millisecond
	synctest.Test(t, func(t *testing.T) { time.Sleep(time.Second) })
}
`
	path := filepath.Join(t.TempDir(), "x_test.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	hits, err := literalDurations(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, h := range hits {
		lines = append(lines, strings.TrimPrefix(h, path+":"))
	}
	want := []string{"4: 300 * time.Millisecond", "5: 2*time.Second", "6: time.Second", "7: 500 * time.Millisecond", "8: 10 * time.Millisecond"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
