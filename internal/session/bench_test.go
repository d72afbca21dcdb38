package session

import (
	"fmt"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// BenchmarkTurn measures one model turn end to end against the scripted server on loopback:
// request assembly, cache placement, the HTTP round trip with SSE parsing, events, and the
// transcript append and sync.
func BenchmarkTurn(b *testing.B) {
	for _, persist := range []bool{false, true} {
		b.Run(fmt.Sprintf("persist=%v", persist), func(b *testing.B) {
			sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("ok")}}}}
			h := newBenchHarness(b, sc, Options{NoPersistence: !persist})
			for b.Loop() {
				for _, err := range h.sess.Send(b.Context(), "hi") {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
