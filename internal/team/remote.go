package team

import (
	"context"
	"fmt"
	"os"
)

// RunnerRemote is the runner of a member that joined by itself (`keel worker`), possibly on
// another host: the lead neither started it nor can abort it; it answers shutdown requests
// through the mailbox and its tasks go back to the board when its lease lapses.
const RunnerRemote = "remote"

// JoinRemote makes this process a member of the team by itself — a worker on any host that
// reaches the team's backend — and runs it until it stops: a general-purpose teammate whose
// work comes from the board and its mail. A name held by a live member is refused; one whose
// member stopped or died is taken over (continuing its transcript when resume is set and the
// transcript is on this host).
func (t *Team) JoinRemote(ctx context.Context, name string, resume bool) error {
	if err := validName(name); err != nil {
		return err
	}
	recs, _ := t.records(ctx)
	spec := Spec{Name: name, AgentType: "general-purpose", Prompt: remotePrompt(t.cfg.Name, name)}
	for _, r := range recs {
		if r.Name != name {
			continue
		}
		switch state := t.liveness(r); state {
		case StateStopped, StateDead:
			spec = r.Spec
			if _, err := os.Stat(r.Transcript); resume && r.Transcript != "" && err == nil {
				spec.Resume = true
			}
		default:
			return fmt.Errorf("join team %s as %s: a member of that name is %s (pid %d on %s); choose another name", t.cfg.Name, name, state, r.PID, r.Host)
		}
	}
	if spec.ID == "" {
		spec.ID = newAgentID()
	}
	if spec.Color == "" {
		spec.Color = nextColor(recs)
	}
	m, err := t.start(ctx, spec, RunnerRemote)
	if err != nil {
		return fmt.Errorf("join team %s as %s: %w", t.cfg.Name, name, err)
	}
	select {
	case <-m.done:
	case <-ctx.Done():
		m.cancel(context.Cause(ctx))
		<-m.done
	}
	return nil
}

func remotePrompt(team, name string) string {
	return fmt.Sprintf("You joined team %s as the worker %s, on a host of your own: your tools work on this host's files, in its working directory. "+
		"Work on the tasks of the team's board as you are given them, and tell the lead what it must know. Until a task arrives there is nothing to do: say you are ready, in one line.", team, name)
}
