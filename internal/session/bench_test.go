package session

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// BenchmarkTurn measures one model turn end to end against the scripted server on loopback:
// request assembly, cache placement, the HTTP round trip with SSE parsing, events, and the
// transcript append and sync. The conversation is cleared between turns (untimed), so every
// turn sends the same one-message history.
func BenchmarkTurn(b *testing.B) {
	for _, persist := range []bool{false, true} {
		b.Run(fmt.Sprintf("persist=%v", persist), func(b *testing.B) {
			sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("ok")}}}}
			h := newBenchHarness(b, sc, Options{NoPersistence: !persist})
			send := func(prompt string) {
				for _, err := range h.sess.Send(b.Context(), prompt) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			for b.Loop() {
				send("hi")
				b.StopTimer()
				send("/clear")
				b.StartTimer()
			}
		})
	}
}

// BenchmarkTeam measures a team of 4 teammates finishing a 20-task board against the
// scripted model: the lead creates the tasks and spawns the team, each teammate claims
// tasks from the board until none is left, and the headless lead shuts the team down.
// Reported: wall time per run (ns/op), model requests, prompt tokens and the share of them
// read from the prompt cache.
//
//	go test -run '^$' -bench Team -benchtime 5x ./internal/session/
func BenchmarkTeam(b *testing.B) {
	const tasks, mates = 20, 4
	var rules []scripted.Rule
	anyMate := func(m scripted.Match) scripted.Match { m.System = "Your name in the team is "; return m }
	for i := 1; i <= tasks; i++ {
		id := fmt.Sprint(i)
		rules = append(rules,
			scripted.Rule{Name: "do " + id, When: anyMate(scripted.Match{UserText: `<task-assignment id="` + id + `"`}),
				Reply: []scripted.Block{scripted.Text("On it."), scripted.ToolUse("TaskUpdate", map[string]any{"taskId": id, "status": "completed"})}},
			scripted.Rule{Name: "done " + id, When: anyMate(scripted.Match{ToolResult: "TaskUpdate", Contains: "Updated task #" + id + " "}),
				Reply: []scripted.Block{scripted.Text("Task " + id + " is done.")}})
	}
	var creates, spawns []scripted.Block
	for i := 1; i <= tasks; i++ {
		creates = append(creates, scripted.ToolUse("TaskCreate", map[string]any{"subject": fmt.Sprintf("part %d", i), "description": fmt.Sprintf("Write part %d of the report.", i)}))
	}
	for i := 1; i <= mates; i++ {
		spawns = append(spawns, scripted.ToolUse("Agent", map[string]any{"description": "writer", "prompt": "Work the board.", "name": fmt.Sprintf("writer%d", i)}))
	}
	rules = append(rules,
		scripted.Rule{Name: "mate starts", When: anyMate(scripted.Match{UserText: "Work the board."}), Reply: []scripted.Block{scripted.Text("Ready.")}},
		scripted.Rule{Name: "lead plans", When: leadTurn(scripted.Match{UserText: "write the report"}), Reply: creates},
		scripted.Rule{Name: "lead spawns", When: leadTurn(scripted.Match{ToolResult: "TaskCreate"}), Reply: spawns},
		scripted.Rule{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("The team is writing.")}},
	)
	sc := &scripted.Scenario{Rules: rules}
	var requests, prompt, read int
	var output atomic.Int64
	count := func(e event.Event) {
		if m, ok := e.(event.AssistantMessage); ok {
			output.Add(m.Usage.OutputTokens)
		}
	}
	for b.Loop() {
		h := newBenchHarness(b, sc, Options{Team: TeamOptions{Enabled: true}})
		h.sess.agents.SetIdleEvents(count)
		for e, err := range h.sess.Send(b.Context(), "write the report") {
			if err != nil {
				b.Fatal(err)
			}
			count(e)
		}
		for {
			n, err := h.sess.agents.WaitBackground(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
			for e := range h.sess.agents.SendPending(b.Context()) {
				count(e)
			}
		}
		board, _ := h.sess.Team().Current().Backend().Board().List(b.Context())
		done := 0
		for _, tk := range board {
			if tk.Status == "completed" {
				done++
			}
		}
		if done != tasks {
			b.Fatalf("%d of %d tasks completed", done, tasks)
		}
		for _, r := range h.srv.Requests() {
			if r.Rule == "fallback" {
				b.Fatalf("a request matched no rule")
			}
			requests++
			prompt += r.Cache.InputTokens
			read += r.Cache.CacheReadTokens
		}
		b.StopTimer()
		h.sess.Close()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(requests)/n, "requests/op")
	b.ReportMetric(float64(prompt)/n, "prompt-tokens/op")
	b.ReportMetric(float64(output.Load())/n, "output-tokens/op")
	b.ReportMetric(100*float64(read)/float64(max(prompt, 1)), "cache-read-%")
}
