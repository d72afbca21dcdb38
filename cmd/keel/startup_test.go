package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
)

// Budgets of the package initialisation every keel process pays, `keel --version` included,
// as GODEBUG=inittrace=1 reports it. Measured at 2,945 allocations and 540 KB (Go 1.26, linux/
// amd64) once the last package-level regular expressions (team, hooks, the scripted model)
// were compiled on first use, at 2,859 allocations and 536 KB once the settings' key table
// was built on first use, and at 2,579 allocations and 491 KB once keel's own packages
// declared their tables as internal/lazy values, and at 1,559 allocations and 216 KB once
// WebFetch's page conversion (x/net/html's entity tables, html-to-markdown) moved into
// keel-web; the budget leaves about 7% for noise and small additions. A package that compiles a regular expression or builds a table at init for
// something most runs never do should do it on first use instead (lazy.Value, lazy.Regexp);
// raise the budget only for init work every run needs.
const (
	initAllocBudget = 1670
	initBytesBudget = 232 << 10
)

// initPackages are keel's own packages that may still have an init function. Each package
// that has one costs every keel start more than its allocations: running its init faults in
// the part of the binary around that function, and the kernel maps 64 KiB of file pages
// around each fault (fault-around), so one small init adds up to 64 KiB of peak RSS. A package
// declares its tables as lazy.Value or lazy.Regexp composite literals, which the linker lays
// out, and has no init function at all. The root package keeps one for the public error
// variables that re-export internal ones (ErrBusy, ErrNotHosted).
var initPackages = []string{
	"github.com/keel-dev/keel",
}

// initCost is one package's line of GODEBUG=inittrace=1.
type initCost struct {
	pkg           string
	bytes, allocs int
}

// TestStartupInitBudget fails when keel's package initialisation allocates past the budget,
// naming the packages that allocate most, so a regression is caught here rather than by a
// benchmark someone remembers to run.
func TestStartupInitBudget(t *testing.T) {
	bin := buildtest.Keel(t, buildtest.Options{})
	cmd := exec.CommandContext(t.Context(), bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("keel --version: %v\n%s", err, stderr.String())
	}
	costs, err := parseInitTrace(stderr.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var allocs, size int
	for _, c := range costs {
		allocs, size = allocs+c.allocs, size+c.bytes
	}
	t.Logf("%d packages initialised: %d allocations, %d KB", len(costs), allocs, size>>10)
	for _, c := range costs {
		if strings.HasPrefix(c.pkg, "github.com/keel-dev/keel") && !slices.Contains(initPackages, c.pkg) {
			t.Errorf("%s has init work (%d allocations, %d bytes): declare its package-level tables and "+
				"regular expressions as lazy.Value / lazy.Regexp literals, so it has no init function", c.pkg, c.allocs, c.bytes)
		}
	}
	if allocs <= initAllocBudget && size <= initBytesBudget {
		return
	}
	slices.SortFunc(costs, func(a, b initCost) int { return b.allocs - a.allocs })
	var top strings.Builder
	for _, c := range costs[:min(15, len(costs))] {
		fmt.Fprintf(&top, "\n  %6d allocs %8d bytes  %s", c.allocs, c.bytes, c.pkg)
	}
	t.Errorf("keel's package initialisation allocates %d times (budget %d), %d KB (budget %d KB); most:%s",
		allocs, initAllocBudget, size>>10, initBytesBudget>>10, top.String())
}

// parseInitTrace reads lines like
// "init net/http @1.2 ms, 0.05 ms clock, 4872 bytes, 50 allocs".
func parseInitTrace(trace []byte) ([]initCost, error) {
	var costs []initCost
	sc := bufio.NewScanner(bytes.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" || f[len(f)-1] != "allocs" || f[len(f)-3] != "bytes," {
			continue
		}
		b, err1 := strconv.Atoi(f[len(f)-4])
		a, err2 := strconv.Atoi(f[len(f)-2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("inittrace line %q: %v %v", sc.Text(), err1, err2)
		}
		costs = append(costs, initCost{pkg: f[1], bytes: b, allocs: a})
	}
	if len(costs) == 0 {
		return nil, fmt.Errorf("no inittrace lines in %q", trace)
	}
	return costs, nil
}
