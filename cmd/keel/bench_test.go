package main

import (
	"context"
	"os/exec"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// buildKeel compiles the real binary once per benchmark.
func buildKeel(b *testing.B) string {
	b.Helper()
	return buildtest.Keel(b, buildtest.Options{})
}

// BenchmarkVersion is the start-up cost of the binary: `keel --version`, process start to exit.
func BenchmarkVersion(b *testing.B) {
	bin := buildKeel(b)
	for b.Loop() {
		if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil {
			b.Fatalf("keel --version: %v\n%s", err, out)
		}
	}
}

// BenchmarkPrintOneTurn is `keel -p` end to end for a one-turn reply against the scripted
// model on loopback: start-up, settings and memory discovery, the request, the reply, exit.
func BenchmarkPrintOneTurn(b *testing.B) {
	bin := buildKeel(b)
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("hello")}}}}
	srv, err := scripted.Start(context.Background(), "", sc, scripted.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	home, work := b.TempDir(), b.TempDir()
	for b.Loop() {
		cmd := exec.Command(bin, "-p", "hi", "--no-session-persistence")
		cmd.Dir = work
		cmd.Env = []string{"HOME=" + home, "KEEL_HOME=" + home, "ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_API_KEY=bench", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil || string(out) != "hello\n" {
			b.Fatalf("keel -p: %v\n%s", err, out)
		}
	}
}
