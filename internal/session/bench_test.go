package session

import (
	"fmt"
	"testing"

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
