package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/permission"
)

// collector builds the View from the records. It keeps the team handles it opened (their
// watches tell the hub when to look again) until it is closed.
type collector struct {
	cfg      Config
	sessions *sessionReader

	// mu guards teams.
	mu    sync.Mutex
	teams map[string]Team
}

func newCollector(cfg Config) *collector {
	return &collector{cfg: cfg, sessions: newSessionReader(cfg.Home), teams: map[string]Team{}}
}

func (c *collector) collect(ctx context.Context) View {
	var v View
	v.Sessions, v.Problems = c.sessions.list(ctx)
	if v.Sessions == nil {
		v.Sessions = []Session{}
	}
	v.Teams = []TeamView{}
	for _, t := range c.openTeams(ctx, &v.Problems) {
		v.Teams = append(v.Teams, c.teamView(ctx, t.name, t.team, &v.Problems))
	}
	v.Jobs = []Job{}
	if c.cfg.Jobs != nil {
		jobs, err := c.cfg.Jobs.List(ctx)
		if err != nil {
			v.Problems = append(v.Problems, "supervisor jobs: "+err.Error())
		}
		if jobs != nil {
			v.Jobs = jobs
		}
	}
	return v
}

type namedTeam struct {
	name string
	team Team
}

// openTeams opens the teams not yet open and returns all, newest first.
func (c *collector) openTeams(ctx context.Context, problems *[]string) []namedTeam {
	if c.cfg.Teams == nil {
		return nil
	}
	var out []namedTeam
	for _, name := range c.cfg.Teams.Names(ctx) {
		c.mu.Lock()
		t := c.teams[name]
		c.mu.Unlock()
		if t == nil {
			var err error
			if t, err = c.cfg.Teams.Open(ctx, name); err != nil {
				*problems = append(*problems, fmt.Sprintf("team %s: %v", name, err))
				continue
			}
			c.mu.Lock()
			c.teams[name] = t
			c.mu.Unlock()
		}
		out = append(out, namedTeam{name, t})
	}
	return out
}

func (c *collector) team(name string) Team {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.teams[name]
}

// watches are the change signals of every open team: members' records, the board, requests
// and the inboxes of its members.
func (c *collector) watches(ctx context.Context) []<-chan struct{} {
	c.mu.Lock()
	teams := make([]Team, 0, len(c.teams))
	for _, t := range c.teams {
		teams = append(teams, t)
	}
	c.mu.Unlock()
	var out []<-chan struct{}
	for _, t := range teams {
		be := t.Backend()
		if ch, err := be.Records().Watch(ctx, "members"); err == nil {
			out = append(out, ch)
		}
		if ch, err := be.Board().Watch(ctx); err == nil {
			out = append(out, ch)
		}
		if ch, err := be.Requests().Watch(ctx); err == nil {
			out = append(out, ch)
		}
	}
	return out
}

func (c *collector) teamView(ctx context.Context, name string, t Team, problems *[]string) TeamView {
	tv := TeamView{Name: name, Tasks: []coord.Task{}, Mail: []Mail{}, Requests: []Permission{}}
	note := func(what string, err error) {
		if err != nil && !errors.Is(err, context.Canceled) {
			*problems = append(*problems, fmt.Sprintf("team %s: %s: %v", name, what, err))
		}
	}
	members, err := t.Members(ctx)
	note("members", err)
	tv.Members = make([]Member, 0, len(members))
	for _, m := range members {
		mv := Member{Name: m.Name, Color: m.Color, AgentType: m.AgentType, Runner: m.Runner, State: m.State, Task: m.Task, Tokens: m.Tokens}
		if m.Record != nil {
			mv.Host = m.Record.Host
		}
		tv.Members = append(tv.Members, mv)
	}
	be := t.Backend()
	tasks, err := be.Board().List(ctx)
	note("board", err)
	if tasks != nil {
		tv.Tasks = tasks
	}
	mb := be.Mailbox()
	for _, m := range members {
		if log, ok := mb.(coord.MailLog); ok {
			delivered, err := log.Delivered(ctx, m.Name, 50)
			note("mail of "+m.Name, err)
			for _, msg := range delivered {
				tv.Mail = append(tv.Mail, mailOf(msg, true))
			}
		}
		unread, err := mb.Fetch(ctx, m.Name, 0)
		note("mail of "+m.Name, err)
		for _, msg := range unread {
			tv.Mail = append(tv.Mail, mailOf(msg, false))
		}
	}
	sort.SliceStable(tv.Mail, func(i, j int) bool { return tv.Mail[i].Sent.Before(tv.Mail[j].Sent) })
	pending, err := be.Requests().Pending(ctx, "")
	note("permission requests", err)
	for _, r := range pending {
		tv.Requests = append(tv.Requests, permissionOf(r))
	}
	return tv
}

func mailOf(m coord.Message, read bool) Mail {
	text := m.Text
	if text == "" && len(m.Data) > 0 {
		text = string(m.Data)
	}
	return Mail{ID: m.ID, From: m.From, To: m.To, Type: m.Type, Summary: m.Summary, Text: text, Sent: m.Sent, Read: read}
}

// permissionOf reads a permission request's question; one that does not parse is shown as
// damaged rather than hidden.
func permissionOf(r coord.Request) Permission {
	p := Permission{ID: r.ID, From: r.From, Created: r.Created}
	var q struct {
		Request permission.Request `json:"request"`
		Reason  string             `json:"reason"`
		Color   string             `json:"color"`
	}
	if err := json.Unmarshal(r.Data, &q); err != nil {
		p.Tool, p.Reason = "(damaged request)", err.Error()
		return p
	}
	p.Tool, p.Reason, p.Color = q.Request.Tool, q.Reason, q.Color
	switch {
	case q.Request.Command != "":
		p.Input = q.Request.Command
	case q.Request.URL != "":
		p.Input = q.Request.URL
	case len(q.Request.Paths) > 0:
		p.Input = strings.Join(q.Request.Paths, ", ")
	default:
		p.Input = string(q.Request.Input)
	}
	return p
}

func (c *collector) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, t := range c.teams {
		_ = t.Close()
		delete(c.teams, name)
	}
}
