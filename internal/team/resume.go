package team

import (
	"context"
	"errors"
	"fmt"
)

// Resume brings a continued session's team back (keel --continue): teammates that ran in
// the lead's process start again from their transcripts, with their history and the task
// they held; teammates in processes of their own that still run are found again through the
// backend and left alone, and those that died are started again. It returns whom it
// restarted.
func (t *Team) Resume(ctx context.Context) ([]string, error) {
	recs, err := t.records(ctx)
	if err != nil && len(recs) == 0 {
		return nil, err
	}
	var restarted []string
	var errs []error
	for _, r := range recs {
		if r.Name == LeadAlias {
			continue
		}
		t.mu.Lock()
		_, running := t.members[r.Name]
		t.mu.Unlock()
		if running {
			continue
		}
		state := t.liveness(r)
		if r.Runner != RunnerInProcess && (state == StateWorking || state == StateIdle) {
			continue // its own process still runs
		}
		spec := r.Spec
		spec.Resume = r.Transcript != ""
		runner := r.Runner
		if runner != RunnerInProcess && t.cfg.Launcher == nil {
			runner = RunnerInProcess
		}
		if err := t.launch(ctx, spec, runner); err != nil {
			errs = append(errs, fmt.Errorf("resume teammate %s: %w", r.Name, err))
			continue
		}
		restarted = append(restarted, r.Name)
	}
	return restarted, errors.Join(errs...)
}
