package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReportOfRealRun runs the fixture module's tests three times with the real go command and
// checks that the report names each kind of failure once, with its message.
func TestReportOfRealRun(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), "go", "test", "-json", "-count=3", "./...")
	cmd.Dir = "testdata/fixture"
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); !ok { // the fixture fails on purpose; anything else is wrong
		t.Fatalf("go test: %v", err)
	}
	r := newReport()
	if err := r.read("fixture.json", bytes.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if !r.write(&b) {
		t.Error("write reported no failure")
	}
	report := b.String()
	var heads []string
	for l := range strings.Lines(report) {
		if strings.HasPrefix(l, "FLAKY") || strings.HasPrefix(l, "FAIL") {
			heads = append(heads, strings.TrimSpace(l))
		}
	}
	want := []string{
		"FLAKY fixture/a TestFlaky: failed 1 of 3 runs",
		"FAIL  fixture/a TestSub/bad: failed 3 of 3 runs",
		"FAIL  fixture/d TestExits: failed 1 of 1 runs (its test binary exited while it ran: a timeout or an exit)",
		"FAIL  fixture/b failed outside any test (fixture.json)",
		"FAIL  fixture/c did not build (fixture.json)",
	}
	if diff := cmp.Diff(want, heads); diff != "" {
		t.Errorf("failures mismatch (-want +got):\n%s\nreport:\n%s", diff, report)
	}
	for _, msg := range []string{"a_test.go:14: run 2 lost the race", "a_test.go:20: always broken",
		"d_test.go:10: about to exit", "leak check: 1 goroutine left running", "undefined: nope",
		"fixture.json: 4 packages, 19 test runs, 8 failed, 4 packages failed"} {
		if !strings.Contains(report, msg) {
			t.Errorf("report lacks %q:\n%s", msg, report)
		}
	}
}

func TestReportAllPassed(t *testing.T) {
	stream := `{"Action":"start","Package":"p"}
not JSON: stray stderr is skipped
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}
{"Action":"pass","Package":"p","Elapsed":1.6}
`
	r := newReport()
	if err := r.read("ok.json", strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if r.write(&b) {
		t.Errorf("write reported a failure:\n%s", b.String())
	}
	want := "ok.json: 1 packages, 1 test runs, 0 failed, 0 packages failed\n\n" +
		"slowest tests (longest run):\n      1.5s  p TestA\n\nno test failed\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("report mismatch (-want +got):\n%s", diff)
	}
}

func TestReportBadLine(t *testing.T) {
	err := newReport().read("bad.json", strings.NewReader("{\"Action\":\"run\"}\n{\"Action\":\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "bad.json:2: ") {
		t.Errorf("err = %v, want one naming bad.json:2", err)
	}
}
