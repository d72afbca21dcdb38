// Package fanout runs one task over many items, one agent per item: at most a cap of them at
// once, each item's state kept durably so that a fan-out cut off by a crash resumes where it
// stopped and never runs a finished item again, the first item run alone until it has
// written the prompt prefix the items share to the cache (so its siblings read it), and one
// summary at the end with every item's result to be looked up.
//
// The ledger is a [coord.Board] of its own, one task per item, in item order (task "1" is
// item 1): the coordination backend's atomic, leased claims are what make a running item
// safe from a second runner, and its completed tasks what a resumed fan-out skips. Workers
// claim as "<owner>-w<k>"; a fan-out started again by the same owner first gives back the
// items its earlier run held (that run is gone: one owner runs a fan-out once at a time),
// so they run again at once instead of after their lease. An item whose run ended but whose
// result was not recorded before the crash runs again: an item is finished when its result
// is in the ledger.
package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

// DefaultConcurrency is how many items run at once unless configured (Claude Code's default
// for concurrent subagents).
const DefaultConcurrency = 20

// ConcurrencyEnv names the environment variable that sets the cap, as Claude Code's
// CLAUDE_CODE_MAX_CONCURRENT_SUBAGENTS does; the configuration layer reads it and passes
// [Config.Concurrency].
const ConcurrencyEnv = "KEEL_MAX_CONCURRENT_SUBAGENTS"

// ParseConcurrency reads the cap from the environment variable's value ("" is the default).
func ParseConcurrency(v string) (int, error) {
	if strings.TrimSpace(v) == "" {
		return DefaultConcurrency, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a whole number of at least 1", ConcurrencyEnv, v)
	}
	return n, nil
}

// State is where an item stands.
type State string

// The states; the last two are finished.
const (
	StatePending State = "pending"
	StateRunning State = "running"
	StateDone    State = "done"
	StateFailed  State = "failed"
)

// Item is one item of a fan-out and what became of it.
type Item struct {
	// Index counts from 1 in the order the items were planned.
	Index  int    `json:"index"`
	Input  string `json:"input"`
	State  State  `json:"state"`
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
	// Attempts counts the runs started; more than one means a run was cut off.
	Attempts int `json:"attempts"`
}

// Metadata keys of an item's task.
const (
	metaResult   = "result"
	metaError    = "error"
	metaAttempts = "attempts"
)

func itemOf(t coord.Task) Item {
	it := Item{Input: t.Description}
	it.Index, _ = strconv.Atoi(t.ID)
	_ = json.Unmarshal(t.Metadata[metaResult], &it.Result)
	_ = json.Unmarshal(t.Metadata[metaError], &it.Error)
	_ = json.Unmarshal(t.Metadata[metaAttempts], &it.Attempts)
	switch {
	case t.Status == coord.StatusCompleted && it.Error != "":
		it.State = StateFailed
	case t.Status == coord.StatusCompleted:
		it.State = StateDone
	case t.Status == coord.StatusInProgress:
		it.State = StateRunning
	default:
		it.State = StatePending
	}
	return it
}

// Plan records items on an empty board, in order. On a board that holds them already (a
// fan-out being resumed) it changes nothing; one that holds other items is an error, since
// resuming it would skip items that were never run.
func Plan(ctx context.Context, board coord.Board, items []string) error {
	if len(items) == 0 {
		return errors.New("plan a fan-out: no items")
	}
	have, err := board.List(ctx)
	if err != nil {
		return fmt.Errorf("plan a fan-out: %w", err)
	}
	if len(have) > 0 {
		same := len(have) == len(items)
		for i := 0; same && i < len(items); i++ {
			same = have[i].Description == items[i]
		}
		if !same {
			return fmt.Errorf("plan a fan-out: its ledger holds %d other items; a fan-out resumes only with the items it was planned with", len(have))
		}
		return nil
	}
	for i, in := range items {
		t, err := board.Create(ctx, coord.Task{Subject: subject(i+1, in), Description: in})
		if err != nil {
			return fmt.Errorf("plan item %d: %w", i+1, err)
		}
		if t.ID != strconv.Itoa(i+1) {
			return fmt.Errorf("plan item %d: the ledger numbered it %s; it must start empty", i+1, t.ID)
		}
	}
	return nil
}

func subject(i int, in string) string {
	line, _, _ := strings.Cut(in, "\n")
	if len(line) > 60 {
		line = line[:60] + "…"
	}
	return fmt.Sprintf("item %d: %s", i, line)
}

// Items returns every item in order.
func Items(ctx context.Context, board coord.Board) ([]Item, error) {
	ts, err := board.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the fan-out's items: %w", err)
	}
	out := make([]Item, 0, len(ts))
	for _, t := range ts {
		out = append(out, itemOf(t))
	}
	return out, nil
}

// Get returns item index (from 1): the per-item result a summary points to.
func Get(ctx context.Context, board coord.Board, index int) (Item, error) {
	t, err := board.Get(ctx, strconv.Itoa(index))
	if err != nil {
		return Item{}, fmt.Errorf("fan-out item %d: %w", index, err)
	}
	return itemOf(t), nil
}

// Summary is a fan-out's outcome: counts, and every item's state with the start of its
// result; the whole result of one is [Get].
type Summary struct {
	Total, Done, Failed, Pending int
	Items                        []Item
	Elapsed                      time.Duration
}

// summarize counts the items and cuts their results for the summary.
func summarize(items []Item, elapsed time.Duration) Summary {
	s := Summary{Total: len(items), Elapsed: elapsed}
	for _, it := range items {
		switch it.State {
		case StateDone:
			s.Done++
		case StateFailed:
			s.Failed++
		default:
			s.Pending++
		}
		it.Result = excerpt(it.Result, 200)
		s.Items = append(s.Items, it)
	}
	return s
}

// Text is the summary as the model reads it: one line per item.
func (s Summary) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Fan-out of %d items: %d done, %d failed", s.Total, s.Done, s.Failed)
	if s.Pending > 0 {
		fmt.Fprintf(&b, ", %d not finished (run it again to resume)", s.Pending)
	}
	fmt.Fprintf(&b, ", in %s. Each item's full result can be looked up by its number.\n", s.Elapsed.Round(time.Second))
	for _, it := range s.Items {
		switch it.State {
		case StateFailed:
			fmt.Fprintf(&b, "%d. failed: %s\n", it.Index, excerpt(it.Error, 200))
		case StateDone:
			fmt.Fprintf(&b, "%d. %s\n", it.Index, strings.ReplaceAll(it.Result, "\n", " "))
		default:
			fmt.Fprintf(&b, "%d. (%s)\n", it.Index, it.State)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func excerpt(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

// logger or a discarding one.
func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
