package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
)

// store keeps the job records in a coordination store's records: compare-and-set updates
// and watches, safe across the supervisor, its jobs and launchers.
type store struct {
	b   *fscoord.Backend
	rec coord.Records
}

func openStore(l Layout) (*store, error) {
	b, err := fscoord.Open(l.Records, fscoord.Options{})
	if err != nil {
		return nil, fmt.Errorf("open supervisor records: %w", err)
	}
	return &store{b: b, rec: b.Records()}, nil
}

func (s *store) close() error { return s.b.Close() }

func jobKey(id string) string { return "jobs/" + id }

func (s *store) create(ctx context.Context, j Job) error {
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job %s: %w", j.Agent.ID, err)
	}
	if _, err := s.rec.Create(ctx, jobKey(j.Agent.ID), data); err != nil {
		return fmt.Errorf("record job %s: %w", j.Agent.ID, err)
	}
	return nil
}

func (s *store) get(ctx context.Context, id string) (Job, uint64, error) {
	r, err := s.rec.Get(ctx, jobKey(id))
	if err != nil {
		return Job{}, 0, fmt.Errorf("read job %s: %w", id, err)
	}
	var j Job
	if err := json.Unmarshal(r.Value, &j); err != nil {
		return Job{}, 0, fmt.Errorf("read job %s: %v: %w", id, err, coord.ErrCorrupt)
	}
	return j, r.Revision, nil
}

// update applies fn to job id by compare-and-set, again on a fresh read when another writer
// came first. fn may return errSkip to change nothing.
func (s *store) update(ctx context.Context, id string, fn func(j *Job) error) (Job, error) {
	for {
		j, rev, err := s.get(ctx, id)
		if err != nil {
			return Job{}, err
		}
		if err := fn(&j); err != nil {
			return j, err
		}
		data, err := json.Marshal(j)
		if err != nil {
			return Job{}, fmt.Errorf("encode job %s: %w", id, err)
		}
		_, err = s.rec.Update(ctx, jobKey(id), data, rev)
		if errors.Is(err, coord.ErrConflict) {
			continue
		}
		if err != nil {
			return Job{}, fmt.Errorf("update job %s: %w", id, err)
		}
		return j, nil
	}
}

// errSkip makes update change nothing.
var errSkip = errors.New("no change")

func (s *store) list(ctx context.Context) ([]Job, error) {
	recs, err := s.rec.List(ctx, "jobs/")
	var jobs []Job
	for _, r := range recs {
		var j Job
		if json.Unmarshal(r.Value, &j) == nil {
			jobs = append(jobs, j)
		}
	}
	slices.SortFunc(jobs, func(a, b Job) int { return a.Created.Compare(b.Created) })
	return jobs, err
}

func (s *store) remove(ctx context.Context, id string) error { return s.rec.Delete(ctx, jobKey(id)) }

func (s *store) watch(ctx context.Context) (<-chan struct{}, error) { return s.rec.Watch(ctx, "jobs/") }

func (s *store) putInfo(ctx context.Context, info Info) error {
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	_, err = s.rec.Put(ctx, "supervisor", data)
	return err
}

func (s *store) info(ctx context.Context) (Info, error) {
	r, err := s.rec.Get(ctx, "supervisor")
	if err != nil {
		return Info{}, err
	}
	var info Info
	err = json.Unmarshal(r.Value, &info)
	return info, err
}

// deliver queues job j's task notification in its session's notification directory. The
// queue ignores a second notification of one task, so a delivery repeated after a crash is
// harmless. A job with no notification directory (a scheduled run, which the scheduler
// reports itself) queues nothing.
func deliver(j Job) error {
	if j.Agent.NotifyDir == "" {
		return nil
	}
	q, err := background.OpenQueue(j.Agent.NotifyDir)
	if err != nil {
		return fmt.Errorf("deliver the result of agent %s: %w", j.Agent.ID, err)
	}
	if err := q.Push(notification(j)); err != nil {
		return fmt.Errorf("deliver the result of agent %s: %w", j.Agent.ID, err)
	}
	return nil
}

func notification(j Job) background.Notification {
	status := background.StatusCompleted
	switch j.State {
	case StateFailed:
		status = background.StatusFailed
	case StateKilled:
		status = background.StatusKilled
	}
	return background.Notification{TaskID: j.Agent.ID, ToolUseID: j.Agent.ToolUseID, Status: status,
		Summary: fmt.Sprintf("Agent %q %s", j.Agent.Description, status), Result: j.Result, Error: j.Error}
}

// describe is one line about a job for logs and errors.
func describe(j Job) string {
	return fmt.Sprintf("agent %s (%s, %q)", j.Agent.ID, strings.TrimSpace(j.Agent.AgentType), j.Agent.Description)
}
