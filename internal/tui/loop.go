package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel/internal/cron"
)

// loopState is a /loop that is active: its prompt runs again and again — at the interval, or
// self-paced (interval 0: each run when the previous one ended) — until the model ends an
// answer with cron.LoopDone or the user stops it (Esc, /loop stop). The runs are paced here,
// in the UI's event loop, with the rules cron.RunLoop applies to `keel loop`.
type loopState struct {
	prompt   string
	interval time.Duration
	runs     int
	runStart time.Time
	// inRun says the current run is the loop's; from is where its items start.
	inRun bool
	from  int
	// due says the next run's time came while another turn was going.
	due bool
	// gen tells a stopped loop's late timer from the current loop's.
	gen int
}

// loopTickMsg says the loop of generation gen may start its next run.
type loopTickMsg struct{ gen int }

// cmdLoop is /loop [interval] PROMPT, and /loop stop.
func (m *Model) cmdLoop(arg string) tea.Cmd {
	arg = strings.TrimSpace(arg)
	if arg == "stop" {
		if m.loop == nil {
			m.notice("no loop is running")
			return nil
		}
		if m.loop.inRun && m.working {
			m.interrupt() // the run's end stops the loop
			return nil
		}
		m.stopLoop("stopped")
		return nil
	}
	if m.loop != nil {
		m.notice("a loop is already running (" + m.loopStatus() + "); /loop stop ends it")
		return nil
	}
	if m.working {
		m.notice("wait for the current turn to end (or esc), then run /loop again")
		return nil
	}
	interval, prompt, err := cron.ParseLoop(arg)
	if err != nil {
		m.errorf(err.Error())
		return nil
	}
	m.loopGen++
	m.loop = &loopState{prompt: prompt, interval: interval, gen: m.loopGen}
	return m.loopRun()
}

// loopRun starts the loop's next run.
func (m *Model) loopRun() tea.Cmd {
	l := m.loop
	l.runs++
	l.runStart, l.inRun, l.due, l.from = m.now(), true, false, len(m.items)
	return m.submitAs(fmt.Sprintf("/loop run %d: %s", l.runs, l.prompt), cron.LoopPrompt(l.prompt))
}

// loopRunEnded is called as a run ends: the loop stops when the user interrupted the run or
// the model said it is done; otherwise the next run is timed.
func (m *Model) loopRunEnded() tea.Cmd {
	l := m.loop
	if l == nil {
		return nil
	}
	if !l.inRun {
		if l.due && len(m.queued) == 0 { // the loop's time came during the user's own turn
			return m.loopRun()
		}
		return nil
	}
	l.inRun = false
	if m.interrupted {
		m.stopLoop("stopped")
		return nil
	}
	var answer strings.Builder
	for _, it := range m.items[min(l.from, len(m.items)):] {
		if it.kind == kindAssistant {
			answer.WriteString(it.text)
		}
		if it.kind == kindError {
			m.stopLoop("stopped: the run failed")
			return nil
		}
	}
	if cron.LoopFinished(answer.String()) {
		m.stopLoop("finished: the model said the work is done")
		return nil
	}
	gen := l.gen
	wait := l.interval - m.now().Sub(l.runStart)
	if wait <= 0 {
		return func() tea.Msg { return loopTickMsg{gen: gen} }
	}
	return tea.Tick(wait, func(time.Time) tea.Msg { return loopTickMsg{gen: gen} })
}

// onLoopTick starts the loop's next run, or marks it due while another turn goes.
func (m *Model) onLoopTick(msg loopTickMsg) tea.Cmd {
	if m.loop == nil || m.loop.gen != msg.gen {
		return nil
	}
	if m.working {
		m.loop.due = true
		return nil
	}
	return m.loopRun()
}

func (m *Model) stopLoop(why string) {
	l := m.loop
	m.loop = nil
	runs := "runs"
	if l.runs == 1 {
		runs = "run"
	}
	m.notice(fmt.Sprintf("loop %s after %d %s", why, l.runs, runs))
}

// loopStatus is the status line's part for an active loop.
func (m *Model) loopStatus() string {
	l := m.loop
	pace := "self-paced"
	if l.interval > 0 {
		pace = "every " + strings.TrimSuffix(strings.TrimSuffix(l.interval.String(), "0s"), "0m")
	}
	return fmt.Sprintf("↻ loop %s · run %d", pace, l.runs)
}
