package tool

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/waittest"
)

type in struct {
	N int `json:"n"`
}

// sleeper answers with its n; safe says whether it may run in parallel. A call with n=1 waits
// until a call with n=2 has finished (when second is set), so the two can only complete if
// they run in parallel, and they complete in the reverse of the model's order.
func sleeper(name string, safe bool, log *[]string, mu *sync.Mutex, second ...chan struct{}) Tool {
	return New(Spec[in]{
		Name: name, Description: name,
		Schema:            json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		IsConcurrencySafe: func(in) bool { return safe },
		Run: func(ctx context.Context, env *Env, v in) Result {
			if len(second) > 0 && v.N == 1 {
				select {
				case <-second[0]:
				case <-time.After(waittest.Timeout()):
					return Errorf("the second read never ran alongside the first")
				}
			}
			if len(second) > 0 && v.N == 2 {
				defer close(second[0])
			}
			mu.Lock()
			*log = append(*log, name)
			mu.Unlock()
			return Text(strings.Repeat("x", v.N))
		},
	})
}

func TestBatchKeepsTheModelsOrder(t *testing.T) {
	var (
		mu  sync.Mutex
		log []string
	)
	second := make(chan struct{})
	pool := Assemble([]Tool{sleeper("Read", true, &log, &mu, second), sleeper("Edit", false, &log, &mu)}, nil)
	r := &Runner{Pool: pool, Validator: NewValidator()}
	calls := []Call{
		{ID: "1", Name: "Read", Input: json.RawMessage(`{"n":1}`)},
		{ID: "2", Name: "Read", Input: json.RawMessage(`{"n":2}`)},
		{ID: "3", Name: "Edit", Input: json.RawMessage(`{"n":3}`)},
		{ID: "4", Name: "Nope", Input: json.RawMessage(`{}`)},
		{ID: "5", Name: "Read", Input: json.RawMessage(`{"n":"five"}`)},
	}
	res := r.Run(t.Context(), calls, func(Call) *Env { return &Env{} })
	var got []string
	for _, x := range res {
		got = append(got, x.ResultText())
	}
	if diff := cmp.Diff([]string{"x", "xx", "xxx"}, got[:3]); diff != "" {
		t.Errorf("results not in the model's order (-want +got):\n%s", diff)
	}
	if !res[3].IsError || !strings.Contains(got[3], "No such tool: Nope. Available tools: Read, Edit") {
		t.Errorf("unknown tool result = %q", got[3])
	}
	if !res[4].IsError || !strings.Contains(got[4], "InputValidationError") {
		t.Errorf("invalid input result = %q", got[4])
	}
	// The unsafe Edit ran after both reads finished.
	if log[len(log)-1] != "Edit" {
		t.Errorf("run order %v: Edit must run after the parallel reads", log)
	}
}

func TestAssembleOrdersBuiltinsThenMCP(t *testing.T) {
	var mu sync.Mutex
	var log []string
	b := []Tool{sleeper("Read", true, &log, &mu), sleeper("Bash", false, &log, &mu)}
	m := []Tool{sleeper("mcp__z__a", true, &log, &mu), sleeper("mcp__a__b", true, &log, &mu), sleeper("Read", true, &log, &mu)}
	got := Assemble(b, m).Names()
	if diff := cmp.Diff([]string{"Read", "Bash", "mcp__a__b", "mcp__z__a"}, got); diff != "" {
		t.Errorf("pool order mismatch (-want +got):\n%s", diff)
	}
}
