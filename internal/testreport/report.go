package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, plus the build events go
// test interleaves with them).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
	ImportPath  string
}

// key names a test, or with an empty test, a package.
type key struct{ pkg, test string }

func (k key) String() string { return k.pkg + " " + k.test }

// outcome is what all streams say of one test.
type outcome struct {
	runs, fails int
	// failure is the output of the first failed run.
	failure string
	// slowest is the longest run, in seconds.
	slowest float64
	// died is set when a test binary exited while this test ran (a timeout, an os.Exit).
	died bool
}

// stream summarises one input.
type stream struct {
	name                      string
	packages, runs, fails     int
	first, last               time.Time
	failedPackages            []string
	testFailsInPackage        map[string]int
	packageOutput, buildError map[string]*strings.Builder
}

// report accumulates the outcomes of every test over every stream read.
type report struct {
	tests map[key]*outcome
	// running holds the output of each test's run in progress.
	running map[key]*strings.Builder
	// paused are the running tests waiting for their turn to run in parallel.
	paused map[key]bool
	// packageFailures are package runs that failed outside any test, with their output.
	packageFailures []packageFailure
	streams         []*stream
}

type packageFailure struct {
	stream, pkg, output string
	build               bool
}

func newReport() *report {
	return &report{tests: map[key]*outcome{}, running: map[key]*strings.Builder{}, paused: map[key]bool{}}
}

// read adds the events of one `go test -json` stream. Lines that are not JSON objects (stray
// stderr merged into the file) are skipped; a broken JSON line is an error naming it.
func (r *report) read(name string, in io.Reader) error {
	s := &stream{name: name, testFailsInPackage: map[string]int{},
		packageOutput: map[string]*strings.Builder{}, buildError: map[string]*strings.Builder{}}
	r.streams = append(r.streams, s)
	br := bufio.NewReader(in)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '{' {
			var ev event
			if jerr := json.Unmarshal(t, &ev); jerr != nil {
				return fmt.Errorf("%s:%d: not a go test -json event: %w", name, n, jerr)
			}
			r.add(s, ev)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
	}
}

func (r *report) add(s *stream, ev event) {
	if !ev.Time.IsZero() {
		if s.first.IsZero() || ev.Time.Before(s.first) {
			s.first = ev.Time
		}
		if ev.Time.After(s.last) {
			s.last = ev.Time
		}
	}
	k := key{ev.Package, ev.Test}
	switch ev.Action {
	case "build-output":
		builder(s.buildError, ev.ImportPath).WriteString(ev.Output)
	case "run":
		r.running[k] = &strings.Builder{}
	case "pause":
		r.paused[k] = true
	case "cont":
		delete(r.paused, k)
	case "output":
		if ev.Test == "" {
			builder(s.packageOutput, ev.Package).WriteString(ev.Output)
		} else {
			builder(r.running, k).WriteString(ev.Output)
		}
	case "pass", "fail":
		if ev.Test == "" {
			r.endPackage(s, ev)
			return
		}
		o := r.outcome(k)
		o.runs++
		s.runs++
		o.slowest = max(o.slowest, ev.Elapsed)
		if ev.Action == "fail" {
			o.fails++
			s.fails++
			s.testFailsInPackage[ev.Package]++
			if o.fails == 1 && r.running[k] != nil {
				o.failure = r.running[k].String()
			}
		}
		delete(r.running, k)
		delete(r.paused, k)
	case "skip":
		if ev.Test == "" {
			s.packages++
		}
		delete(r.running, k)
	}
}

// endPackage records a package's end. Tests still running when a failed binary exited (a
// timeout's panic, a crash) count as failed runs; a failure that no failed test explains is
// kept with the package's own output (a build error, an exit from TestMain).
func (r *report) endPackage(s *stream, ev event) {
	s.packages++
	if ev.Action != "fail" {
		return
	}
	s.failedPackages = append(s.failedPackages, ev.Package)
	for k, b := range r.running {
		if k.pkg != ev.Package {
			continue
		}
		delete(r.running, k)
		if r.paused[k] {
			delete(r.paused, k)
			continue
		}
		o := r.outcome(k)
		o.runs++
		o.fails++
		s.runs++
		s.fails++
		s.testFailsInPackage[ev.Package]++
		o.died = true
		if o.fails == 1 {
			o.failure = b.String()
		}
	}
	if s.testFailsInPackage[ev.Package] > 0 {
		return
	}
	f := packageFailure{stream: s.name, pkg: ev.Package}
	if ev.FailedBuild != "" {
		f.build = true
		if b := s.buildError[ev.FailedBuild]; b != nil {
			f.output = b.String()
		}
	} else if b := s.packageOutput[ev.Package]; b != nil {
		f.output = b.String()
	}
	r.packageFailures = append(r.packageFailures, f)
}

func (r *report) outcome(k key) *outcome {
	o := r.tests[k]
	if o == nil {
		o = &outcome{}
		r.tests[k] = o
	}
	return o
}

func builder[K comparable](m map[K]*strings.Builder, k K) *strings.Builder {
	b := m[k]
	if b == nil {
		b = &strings.Builder{}
		m[k] = b
	}
	return b
}

// failing returns the failed tests worth naming, flaky ones first: a parent whose failure a
// failed subtest explains is left out.
func (r *report) failing() []key {
	var ks []key
	for k, o := range r.tests {
		if o.fails > 0 {
			ks = append(ks, k)
		}
	}
	explained := func(parent key) bool {
		for _, k := range ks {
			if k.pkg == parent.pkg && strings.HasPrefix(k.test, parent.test+"/") {
				return true
			}
		}
		return false
	}
	ks = slices.DeleteFunc(ks, explained)
	slices.SortFunc(ks, func(a, b key) int {
		fa, fb := r.flaky(a), r.flaky(b)
		if fa != fb {
			if fa {
				return -1
			}
			return 1
		}
		return strings.Compare(a.String(), b.String())
	})
	return ks
}

func (r *report) flaky(k key) bool { o := r.tests[k]; return o.fails < o.runs }

// maxOutputLines bounds the output shown per failure; the end is kept, where the failure is.
// maxPanicLines is the part of a panic shown: its message and, for a timeout, the running tests.
const (
	maxOutputLines = 30
	maxPanicLines  = 12
)

// write prints each stream's totals, each failure with its output, and the slowest tests; it
// reports whether anything failed.
func (r *report) write(w io.Writer) bool {
	for _, s := range r.streams {
		d := ""
		if !s.first.IsZero() {
			d = fmt.Sprintf(", %v", s.last.Sub(s.first).Round(time.Second))
		}
		fmt.Fprintf(w, "%s: %d packages, %d test runs, %d failed, %d packages failed%s\n",
			s.name, s.packages, s.runs, s.fails, len(s.failedPackages), d)
	}
	failed := r.failing()
	for _, k := range failed {
		o := r.tests[k]
		label := "FAIL "
		if r.flaky(k) {
			label = "FLAKY"
		}
		died := ""
		if o.died {
			died = " (its test binary exited while it ran: a timeout or an exit)"
		}
		fmt.Fprintf(w, "\n%s %s: failed %d of %d runs%s\n", label, k, o.fails, o.runs, died)
		writeIndented(w, o.failure)
	}
	slices.SortFunc(r.packageFailures, func(a, b packageFailure) int {
		return cmp.Or(strings.Compare(a.pkg, b.pkg), strings.Compare(a.stream, b.stream))
	})
	for _, f := range r.packageFailures {
		what := "failed outside any test"
		if f.build {
			what = "did not build"
		}
		fmt.Fprintf(w, "\nFAIL  %s %s (%s)\n", f.pkg, what, f.stream)
		writeIndented(w, f.output)
	}
	r.writeSlowest(w, 10)
	if len(failed) == 0 && len(r.packageFailures) == 0 {
		fmt.Fprintln(w, "\nno test failed")
		return false
	}
	return true
}

func (r *report) writeSlowest(w io.Writer, n int) {
	ks := make([]key, 0, len(r.tests))
	for k := range r.tests {
		if !strings.Contains(k.test, "/") {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b key) int {
		if c := cmp.Compare(r.tests[b].slowest, r.tests[a].slowest); c != 0 {
			return c
		}
		return strings.Compare(a.String(), b.String())
	})
	if len(ks) == 0 {
		return
	}
	fmt.Fprintln(w, "\nslowest tests (longest run):")
	for _, k := range ks[:min(n, len(ks))] {
		fmt.Fprintf(w, "  %7.1fs  %s\n", r.tests[k].slowest, k)
	}
}

// writeIndented prints out indented: from its panic line if it has one (a timeout names the
// running tests there), else its end, where a failure's message is.
func writeIndented(w io.Writer, out string) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "panic: ") }); i >= 0 {
		lines = lines[i:min(len(lines), i+maxPanicLines)]
	} else if len(lines) > maxOutputLines {
		fmt.Fprintf(w, "    … %d lines before\n", len(lines)-maxOutputLines)
		lines = lines[len(lines)-maxOutputLines:]
	}
	for _, l := range lines {
		if l != "" {
			fmt.Fprintf(w, "    %s\n", strings.TrimPrefix(l, "    "))
		}
	}
}
