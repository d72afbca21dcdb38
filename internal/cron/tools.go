package cron

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/tool"
)

// Tool names, as in Claude Code.
const (
	CreateToolName = "CronCreate"
	ListToolName   = "CronList"
	DeleteToolName = "CronDelete"
)

//go:embed *.md
var descriptions embed.FS

func description(name string) string {
	b, err := descriptions.ReadFile(name + ".md")
	if err != nil {
		panic("cron: no description for " + name)
	}
	return strings.TrimRight(string(b), "\n")
}

// Tools returns CronCreate, CronList and CronDelete for the session origin, in that order.
// Jobs are listed and deleted per project (origin's working directory).
func Tools(s *Store, origin Origin) []tool.Tool {
	return ToolsWith(s, origin, nil)
}

// ToolsWith is [Tools] with started, which CronCreate calls after recording a job to make
// sure something runs it (the session starts the supervisor); when it fails the job is
// deleted again and the model told why, so no job waits for a scheduler that never comes.
func ToolsWith(s *Store, origin Origin, started func(context.Context) error) []tool.Tool {
	return ToolsAt(fixed(s, origin), started)
}

// Place is where a session's jobs are kept and what they carry: the store (the supervisor's
// records, or a team's backend) and the session as their origin.
type Place struct {
	Store  *Store
	Origin Origin
}

// ToolsAt is [ToolsWith] with the place looked up at each call: a session's tools are built
// before it joins its team, and a team on NATS keeps its jobs on NATS, where any machine's
// supervisor can run them.
func ToolsAt(place func() Place, started func(context.Context) error) []tool.Tool {
	return []tool.Tool{createTool(place, started), listTool(place), deleteTool(place)}
}

func fixed(s *Store, origin Origin) func() Place {
	return func() Place { return Place{Store: s, Origin: origin} }
}

type createInput struct {
	Cron      string `json:"cron"`
	Prompt    string `json:"prompt"`
	Recurring *bool  `json:"recurring,omitempty"`
	Durable   bool   `json:"durable,omitempty"`
}

// CreateOutput is CronCreate's structured result (Claude Code's fields).
type CreateOutput struct {
	ID            string    `json:"id"`
	HumanSchedule string    `json:"humanSchedule"`
	Recurring     bool      `json:"recurring"`
	Durable       bool      `json:"durable"`
	NextRun       time.Time `json:"nextRun"`
}

// CreateTool returns CronCreate.
func CreateTool(s *Store, origin Origin) tool.Tool { return createTool(fixed(s, origin), nil) }

func createTool(place func() Place, started func(context.Context) error) tool.Tool {
	return tool.New(tool.Spec[createInput]{
		Name:        CreateToolName,
		Description: description(CreateToolName),
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"cron":{"type":"string","description":"5-field cron expression in local time \"M H DoM Mon DoW\", a descriptor (@hourly, @every 30m), or an RFC 3339 time for one run"},` +
			`"prompt":{"type":"string","description":"The prompt to run at each fire time"},` +
			`"recurring":{"type":"boolean","description":"true (default): every match until deleted or expired after 7 days; false: once, then deleted"},` +
			`"durable":{"type":"boolean","description":"true: keep the job after this session ends; false (default): it ends with this session"}},` +
			`"required":["cron","prompt"],"additionalProperties":false}`),
		Deferred: true,
		Run: func(ctx context.Context, env *tool.Env, in createInput) tool.Result {
			p := place()
			s, origin := p.Store, p.Origin
			recurring := in.Recurring == nil || *in.Recurring
			if _, err := time.Parse(time.RFC3339, strings.TrimSpace(in.Cron)); err == nil && in.Recurring == nil {
				recurring = false // a moment happens once; only an explicit true is a mistake
			}
			j, err := s.Create(ctx, Spec{Cron: in.Cron, Prompt: in.Prompt, Recurring: recurring, Durable: in.Durable, Origin: origin})
			if err != nil {
				return tool.Errorf("%v", err)
			}
			if started != nil {
				if err := started(ctx); err != nil {
					_, derr := s.Delete(context.WithoutCancel(ctx), j.ID)
					return tool.Errorf("no job was scheduled: the keel supervisor, which runs scheduled jobs, could not be started: %v", errors.Join(err, derr))
				}
			}
			sched, _ := j.Schedule()
			out := CreateOutput{ID: j.ID, HumanSchedule: sched.Human(), Recurring: j.Recurring, Durable: j.Durable, NextRun: sched.Next(j.Created)}
			return tool.Result{Content: tool.Text(createdText(j, out)).Content, Output: out}
		},
	})
}

func createdText(j Job, out CreateOutput) string {
	var b strings.Builder
	kind := "one-shot"
	if j.Recurring {
		kind = "recurring"
	}
	fmt.Fprintf(&b, "Scheduled job %s (%s, %s). Next run: %s.\n", j.ID, out.HumanSchedule, kind, out.NextRun.Format(time.RFC3339))
	b.WriteString("It runs in the keel supervisor, also when no keel window is open; each run's result comes back here as a task notification.")
	if j.Recurring {
		fmt.Fprintf(&b, " It expires on %s (it then runs once more).", j.Expires.Format(time.RFC3339))
	}
	if !j.Durable {
		b.WriteString(" It ends with this session (durable: false).")
	}
	fmt.Fprintf(&b, " Stop it with CronDelete %s.", j.ID)
	return b.String()
}

// ListedJob is one job in CronList's structured result.
type ListedJob struct {
	ID            string    `json:"id"`
	Cron          string    `json:"cron"`
	HumanSchedule string    `json:"humanSchedule"`
	Prompt        string    `json:"prompt"`
	Recurring     bool      `json:"recurring"`
	Durable       bool      `json:"durable"`
	NextRun       time.Time `json:"nextRun,omitzero"`
	Runs          int       `json:"runs"`
	Running       bool      `json:"running,omitempty"`
	// Team is the team whose records hold the job, when a team's.
	Team string `json:"team,omitempty"`
}

// ListJobs describes jobs as CronList and `keel cron list` show them.
func ListJobs(jobs []Job) []ListedJob {
	out := []ListedJob{}
	for _, j := range jobs {
		l := ListedJob{ID: j.ID, Cron: j.Cron, HumanSchedule: j.Cron, Prompt: j.Prompt, Recurring: j.Recurring, Durable: j.Durable,
			Runs: j.Runs, Running: j.Pending != nil, Team: j.Origin.Team}
		if sched, err := j.Schedule(); err == nil {
			l.HumanSchedule = sched.Human()
			from := j.LastTick
			if from.IsZero() {
				from = j.Created
			}
			l.NextRun = sched.Next(from)
		}
		out = append(out, l)
	}
	return out
}

// FormatList is the text of a job listing, one job a line.
func FormatList(jobs []ListedJob) string {
	if len(jobs) == 0 {
		return "No scheduled jobs."
	}
	var b strings.Builder
	for _, l := range jobs {
		kind := "one-shot"
		if l.Recurring {
			kind = "recurring"
		}
		if l.Durable {
			kind += ", durable"
		}
		next := "none"
		if !l.NextRun.IsZero() {
			next = l.NextRun.Format(time.RFC3339)
		}
		if l.Running {
			next = "running now"
		}
		if l.Team != "" {
			kind += ", team " + l.Team
		}
		fmt.Fprintf(&b, "%s  %s (%s)  next: %s  runs: %d  prompt: %q\n", l.ID, l.HumanSchedule, kind, next, l.Runs, excerpt(l.Prompt, 100))
	}
	return strings.TrimRight(b.String(), "\n")
}

// ListTool returns CronList.
func ListTool(s *Store, origin Origin) tool.Tool { return listTool(fixed(s, origin)) }

func listTool(place func() Place) tool.Tool {
	return tool.New(tool.Spec[struct{}]{
		Name:              ListToolName,
		Description:       description(ListToolName),
		Schema:            json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		IsReadOnly:        tool.Always[struct{}],
		IsConcurrencySafe: tool.Always[struct{}],
		Deferred:          true,
		Run: func(ctx context.Context, env *tool.Env, _ struct{}) tool.Result {
			p := place()
			jobs, err := p.Store.ListProject(ctx, p.Origin.Cwd)
			if err != nil && len(jobs) == 0 {
				return tool.Errorf("list scheduled jobs: %v", err)
			}
			listed := ListJobs(jobs)
			text := FormatList(listed)
			if err != nil {
				text += "\n(some jobs could not be read: " + err.Error() + ")"
			}
			return tool.Result{Content: tool.Text(text).Content, Output: map[string]any{"jobs": listed}}
		},
	})
}

type deleteInput struct {
	ID string `json:"id"`
}

// DeleteTool returns CronDelete.
func DeleteTool(s *Store, origin Origin) tool.Tool { return deleteTool(fixed(s, origin)) }

func deleteTool(place func() Place) tool.Tool {
	return tool.New(tool.Spec[deleteInput]{
		Name:        DeleteToolName,
		Description: description(DeleteToolName),
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"Job ID returned by CronCreate"}},"required":["id"],"additionalProperties":false}`),
		Deferred: true,
		Run: func(ctx context.Context, env *tool.Env, in deleteInput) tool.Result {
			p := place()
			s, origin := p.Store, p.Origin
			j, err := s.Get(ctx, in.ID)
			if err == nil && j.Origin.Cwd != origin.Cwd {
				err = fmt.Errorf("job %s belongs to another project (%s): %w", in.ID, j.Origin.Cwd, ErrNotFound)
			}
			if err == nil {
				_, err = s.Delete(ctx, in.ID)
			}
			if errors.Is(err, ErrNotFound) {
				return tool.Errorf("No scheduled job with id %s in this project; CronList shows the ids", in.ID)
			}
			if err != nil {
				return tool.Errorf("delete scheduled job %s: %v", in.ID, err)
			}
			text := fmt.Sprintf("Deleted scheduled job %s.", j.ID)
			if j.Pending != nil {
				text += " Its current run finishes and reports."
			}
			return tool.Result{Content: tool.Text(text).Content, Output: map[string]string{"id": j.ID}}
		},
	})
}
