// Command testreport reads `go test -json` streams and names every test that failed, with how
// many of its runs failed, so a stress run (scripts/stress.sh) says which tests flake rather
// than leaving one to search thousands of lines of output.
//
//	go test -json -count=3 ./... > a.json; go run ./internal/testreport a.json b.json
//
// A test that failed in some runs and passed in others is FLAKY; one that failed in every run
// is FAIL. A parent test that failed only because a subtest did is not listed again; a package
// that failed outside any test (a build error, a panic in TestMain, a timeout) is listed as the
// package. Each failure shows the output of its first failed run. The exit status is 1 when
// anything failed, 2 when a stream cannot be read.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	r := newReport()
	if len(os.Args) == 1 {
		if err := r.read("stdin", os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
	}
	for _, path := range os.Args[1:] {
		if err := readFile(r, path); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
	}
	if r.write(os.Stdout) {
		os.Exit(1)
	}
}

func readFile(r *report, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return r.read(path, io.Reader(f))
}
