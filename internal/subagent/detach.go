package subagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
)

// Detacher runs background agents in another process that outlives this one: the keel
// supervisor. With [Config.Detacher] set, a background Agent call of the main thread (not a
// fork, which shares this process's request bytes) is handed to it when [Config.Detach] is set; this process keeps a
// mirror task that waits for the result, and the supervisor writes the notification into the
// main thread's queue directory itself, so that it reaches the session also when this
// process is gone.
type Detacher interface {
	// Detach hands the agent over; it returns once the supervisor has it durably.
	Detach(ctx context.Context, a DetachedAgent) error
	// Wait blocks until the agent ended and its notification is queued, and returns its
	// final text.
	Wait(ctx context.Context, id string) (string, error)
	// Stop asks for the agent to be stopped and waits until it was.
	Stop(ctx context.Context, id string) error
}

// DetachedAgent is what another process needs to run a background agent of this session.
type DetachedAgent struct {
	ID          string `json:"id"`
	AgentType   string `json:"agentType"`
	Description string `json:"description"`
	Prompt      string `json:"prompt"`
	Model       string `json:"model,omitempty"`
	Isolation   string `json:"isolation,omitempty"`
	ToolUseID   string `json:"toolUseId,omitempty"`
	// SessionID and SessionPath name the session; the agent's transcript goes beside it.
	SessionID   string `json:"sessionId"`
	SessionPath string `json:"sessionPath"`
	// NotifyDir is the main thread's notification queue directory.
	NotifyDir string `json:"notifyDir"`
	// Item says Prompt is one item of a fan-out: it goes after the listings of the agent's
	// first message, behind a cache breakpoint its siblings share.
	Item bool `json:"item,omitempty"`
	// ItemShared is how many bytes of Prompt every item of the fan-out begins with; they go
	// before the breakpoint too.
	ItemShared int `json:"itemShared,omitempty"`
}

// detachable reports whether s may run in the supervisor.
func (r *Runner) detachable(s spawn) bool {
	return r.cfg.Detacher != nil && r.cfg.Detach && s.background && !s.fork && s.id == "" && !s.plain &&
		s.parent != nil && s.parent.owner == background.MainOwner && r.cfg.SessionPath != "" &&
		r.cfg.Tasks.QueueDir(background.MainOwner) != ""
}

// detach hands s to the supervisor and starts the mirror task.
func (r *Runner) detach(ctx context.Context, s spawn) tool.Result {
	id := newID()
	a := DetachedAgent{ID: id, AgentType: s.def.Name, Description: s.in.Description, Prompt: s.in.Prompt, Model: s.in.Model,
		Isolation: s.in.Isolation, ToolUseID: s.toolUseID, SessionID: r.cfg.SessionID, SessionPath: r.cfg.SessionPath,
		NotifyDir: r.cfg.Tasks.QueueDir(background.MainOwner)}
	if err := r.cfg.Detacher.Detach(ctx, a); err != nil {
		return tool.Errorf("start background agent in the keel supervisor: %v; run it in the foreground instead (without run_in_background)", err)
	}
	r.mu.Lock()
	r.remote[id] = true
	r.mu.Unlock()
	task := background.Spec{ID: id, Kind: "local_agent", Owner: background.MainOwner, Description: s.in.Description,
		ToolUseID: s.toolUseID, Origin: event.Origin{AgentID: id, AgentName: s.def.Name, ParentToolUseID: s.toolUseID},
		Prompt: s.in.Prompt, SubagentType: s.def.Name, Remote: true}
	if _, err := r.cfg.Tasks.Start(task, r.mirror(id)); err != nil {
		return tool.Errorf("start agent: %v", err)
	}
	return receipt(&child{spec: s, n: &node{id: id}}, false)
}

// Reattach mirrors an agent that runs in the supervisor for this session but was started by
// an earlier process, so that this one waits for it and can stop it.
func (r *Runner) Reattach(a DetachedAgent) error {
	if r.cfg.Detacher == nil {
		return errors.New("reattach agent: no supervisor")
	}
	r.mu.Lock()
	r.remote[a.ID] = true
	r.mu.Unlock()
	origin := event.Origin{AgentID: a.ID, AgentName: a.AgentType, ParentToolUseID: a.ToolUseID}
	_, err := r.cfg.Tasks.Start(background.Spec{ID: a.ID, Kind: "local_agent", Owner: background.MainOwner, Description: a.Description,
		ToolUseID: a.ToolUseID, Origin: origin, Prompt: a.Prompt, SubagentType: a.AgentType, Remote: true, Announced: true}, r.mirror(a.ID))
	return err
}

// mirror is the run function of a remote agent's mirror task.
func (r *Runner) mirror(id string) func(ctx context.Context, t *background.Task) (string, error) {
	return func(ctx context.Context, t *background.Task) (string, error) {
		text, err := r.cfg.Detacher.Wait(ctx, id)
		if errors.Is(context.Cause(ctx), background.ErrKilled) {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if serr := r.cfg.Detacher.Stop(sctx, id); serr != nil {
				r.logger.Warn("stop agent in the supervisor", "agent", id, "err", serr)
			}
		}
		return text, err
	}
}

// runningRemote reports an agent that runs in the supervisor right now.
func (r *Runner) runningRemote(id string) bool {
	r.mu.Lock()
	remote := r.remote[id]
	r.mu.Unlock()
	if !remote {
		return false
	}
	info, ok := r.cfg.Tasks.Get(id)
	return ok && !info.Status.Terminal()
}

// RunDetached runs a detached agent of another process's session here, to its end, and
// returns its final text: the supervisor's job. When the agent's transcript exists already
// (the process that ran it before died), it continues from there.
func (r *Runner) RunDetached(ctx context.Context, a DetachedAgent) (string, error) {
	main := r.node("")
	if main == nil {
		return "", errors.New("run agent: the session has not started")
	}
	typ := a.AgentType
	if typ == "" {
		typ = "general-purpose"
	}
	def, ok := r.cfg.Defs.Get(typ)
	if !ok {
		return "", fmt.Errorf("run agent: agent type %q not found; available agents: %s", typ, r.available())
	}
	s := spawn{parent: main, def: def, in: Input{Description: a.Description, Prompt: a.Prompt, Model: a.Model, Isolation: a.Isolation},
		toolUseID: a.ToolUseID, id: a.ID, foreground: true, item: a.Item, itemShared: a.ItemShared}
	if path, _ := transcript.AgentPaths(r.cfg.SessionPath, a.ID); r.cfg.SessionPath != "" && exists(path) {
		resumed, err := r.resumeSpec(ctx, main, a.ID)
		if err != nil {
			return "", err
		}
		resumed.toolUseID, resumed.foreground = a.ToolUseID, true
		resumed.in = Input{Description: a.Description, Model: a.Model,
			Prompt: "The process that ran you stopped before you finished. Continue the task where you left off and give your final report."}
		s = resumed
	}
	c, err := r.prepare(ctx, s)
	if err != nil {
		return "", fmt.Errorf("start agent: %w", err)
	}
	r.mu.Lock()
	r.agents[c.n.id] = c.n
	r.mu.Unlock()
	res := r.run(ctx, c)
	return res.text, res.err
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
