package cron

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/lazy"
)

// LoopDone is the line with which the model ends its answer when the work a loop repeats is
// finished; the loop then stops.
const LoopDone = "<loop-done/>"

// loopNote is added to every run's prompt so that the model knows how to end the loop.
const loopNote = "\n\n(This prompt runs again and again in a loop. When the work it is for is finished, " +
	"or running it again would be pointless, end your answer with the line " + LoopDone + " and the loop stops.)"

var (
	leadingInterval  = lazy.Regexp{Expr: `^(\d+[smhd])\s+(.+)$`}
	trailingInterval = lazy.Regexp{Expr: `^(.+?)\s+every\s+(\d+)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?)$`}
)

// ParseLoop reads /loop's and `keel loop`'s arguments, as Claude Code's /loop does: a leading
// interval ("5m check the deploy"), or a trailing "every" clause ("check the deploy every 20
// minutes"), or none — a self-paced loop, each run starting when the previous one ended.
func ParseLoop(args string) (interval time.Duration, prompt string, err error) {
	args = strings.TrimSpace(args)
	if args == "" {
		return 0, "", errors.New("usage: /loop [interval] PROMPT, e.g. /loop 5m check the deploy (intervals: Ns, Nm, Nh, Nd; none: the next run starts when one ends)")
	}
	spec := ""
	if m := leadingInterval.Get().FindStringSubmatch(args); m != nil {
		spec, prompt = m[1], m[2]
	} else if m := trailingInterval.Get().FindStringSubmatch(args); m != nil {
		spec, prompt = m[2]+m[3][:1], m[1]
	} else {
		return 0, args, nil
	}
	d, err := parseInterval(spec)
	if err != nil {
		return 0, "", err
	}
	return d, strings.TrimSpace(prompt), nil
}

// LoopPrompt is what one run of a loop of prompt sends: the prompt and how to end the loop.
// The TUI's /loop, which paces its runs in its own event loop, uses it as RunLoop does.
func LoopPrompt(prompt string) string { return prompt + loopNote }

// LoopFinished says whether a run's answer ends the loop.
func LoopFinished(answer string) bool {
	return strings.HasSuffix(strings.TrimSpace(answer), LoopDone)
}

// Sender runs one prompt in the loop's session and returns the model's final answer.
type Sender func(ctx context.Context, prompt string) (string, error)

// RunLoop runs prompt through send again and again until ctx ends (the user stopped it), a
// run fails, or the model ends an answer with [LoopDone]. With an interval, runs start that
// far apart (a run longer than the interval is followed at once by the next); without one,
// each run starts when the previous one ended. It returns how many runs were made; a loop
// the user stopped is not an error.
func RunLoop(ctx context.Context, interval time.Duration, prompt string, send Sender) (int, error) {
	if strings.TrimSpace(prompt) == "" {
		return 0, errors.New("loop: the prompt is empty")
	}
	runs := 0
	for {
		start := time.Now()
		answer, err := send(ctx, LoopPrompt(prompt))
		if ctx.Err() != nil {
			return runs, nil
		}
		runs++
		if err != nil {
			return runs, fmt.Errorf("loop run %d: %w", runs, err)
		}
		if LoopFinished(answer) {
			return runs, nil
		}
		if wait := interval - time.Since(start); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return runs, nil
			case <-t.C:
			}
		}
	}
}
