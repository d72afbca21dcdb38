package session

import (
	"context"
	"fmt"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/teamstore"
)

// CoordinationOptions say how teams reach NATS when settings choose that backend
// (teamstore.Options).
type CoordinationOptions = teamstore.Options

// teamStore is where this session's team is kept: the backend settings and the environment
// choose, under home (keel's directory, or a temporary one without it).
func (h *TeamHandle) teamStore(home string) teamstore.Store {
	s := h.s
	return teamstore.Choose(s.settings, home, s.opts.Coordination)
}

// openTeamBackend opens this session's team store and reports the NATS connection's state
// as notices (a lost connection, its return).
func (h *TeamHandle) openTeamBackend(ctx context.Context, store teamstore.Store, name string) (coord.Backend, error) {
	s := h.s
	return store.Open(ctx, name, coord.Config{Logger: s.logger}, func(st natscoord.State) {
		if st.Connected {
			s.emitAgent(event.Notice{Level: "info", Text: fmt.Sprintf("team %s: connected to NATS at %s again", name, st.URL)})
			return
		}
		text := fmt.Sprintf("team %s: lost the connection to NATS", name)
		if st.Err != nil {
			text += fmt.Sprintf(" (%v)", st.Err)
		}
		s.emitAgent(event.Notice{Level: "warn", Text: text + "; reconnecting — nothing is lost meanwhile"})
	})
}
