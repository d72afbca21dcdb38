package cron

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseLoop(t *testing.T) {
	for _, tc := range []struct {
		args     string
		interval time.Duration
		prompt   string
	}{
		{"5m /babysit-prs", 5 * time.Minute, "/babysit-prs"},
		{"2h check the deploy", 2 * time.Hour, "check the deploy"},
		{"check the deploy every 20m", 20 * time.Minute, "check the deploy"},
		{"check the deploy every 2 hours", 2 * time.Hour, "check the deploy"},
		{"check every PR", 0, "check every PR"},
		{"keep fixing the tests until they pass", 0, "keep fixing the tests until they pass"},
	} {
		d, p, err := ParseLoop(tc.args)
		if err != nil || d != tc.interval || p != tc.prompt {
			t.Errorf("ParseLoop(%q) = %v, %q, %v; want %v, %q", tc.args, d, p, err, tc.interval, tc.prompt)
		}
	}
	for args, want := range map[string]string{"": "usage: /loop", "30s poll": "shorter than 1m0s", "poll every 10 seconds": "shorter than 1m0s"} {
		if _, _, err := ParseLoop(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLoop(%q) = %v, want an error containing %q", args, err, want)
		}
	}
}

func TestRunLoopWithAnIntervalStopsWhenTheModelIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		answers := []string{"deploy still rolling", "still rolling", "deploy finished\n" + LoopDone + "\n"}
		runs, err := RunLoop(t.Context(), 5*time.Minute, "check the deploy", func(ctx context.Context, prompt string) (string, error) {
			if !strings.HasPrefix(prompt, "check the deploy") || !strings.Contains(prompt, LoopDone) {
				t.Errorf("prompt %q", prompt)
			}
			at = append(at, time.Since(start))
			time.Sleep(time.Minute) // the run takes a minute
			a := answers[0]
			answers = answers[1:]
			return a, nil
		})
		if err != nil || runs != 3 {
			t.Fatalf("RunLoop = %d, %v; want 3 runs", runs, err)
		}
		if diff := cmp.Diff([]time.Duration{0, 5 * time.Minute, 10 * time.Minute}, at); diff != "" {
			t.Errorf("run starts, mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestRunLoopSelfPacedStopsWhenTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, stop := context.WithCancel(t.Context())
		start := time.Now()
		var at []time.Duration
		runs, err := RunLoop(ctx, 0, "fix the next failing test", func(ctx context.Context, prompt string) (string, error) {
			at = append(at, time.Since(start))
			if len(at) == 4 {
				stop() // the user stops the loop during the fourth run
				return "", ctx.Err()
			}
			time.Sleep(3 * time.Minute)
			return "fixed one", nil
		})
		if err != nil || runs != 3 {
			t.Fatalf("RunLoop = %d, %v; want 3 finished runs and no error", runs, err)
		}
		if diff := cmp.Diff([]time.Duration{0, 3 * time.Minute, 6 * time.Minute, 9 * time.Minute}, at); diff != "" {
			t.Errorf("run starts, mismatch (-want +got):\n%s", diff)
		}
		failed := errors.New("model overloaded")
		if runs, err := RunLoop(t.Context(), 0, "p", func(context.Context, string) (string, error) { return "", failed }); !errors.Is(err, failed) || runs != 1 {
			t.Errorf("a failing run: %d, %v", runs, err)
		}
	})
}
