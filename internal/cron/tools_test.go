package cron_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/tool"
)

// call validates input against the tool's schema, as the batch runner does, then calls it.
func call(t *testing.T, tl tool.Tool, input string) tool.Result {
	t.Helper()
	if err := tool.NewValidator().Validate(tl, json.RawMessage(input)); err != nil {
		return tool.Result{IsError: true, Content: tool.Text(err.Error()).Content, InputError: true}
	}
	return tl.Call(t.Context(), &tool.Env{}, json.RawMessage(input))
}

func TestToolsCreateListDelete(t *testing.T) {
	st, _ := openStore(t, t.TempDir(), nil)
	o := origin(t)
	tools := cron.Tools(st, o)
	create, list, del := tools[0], tools[1], tools[2]
	if got := []string{create.Name(), list.Name(), del.Name()}; strings.Join(got, " ") != "CronCreate CronList CronDelete" {
		t.Fatalf("tool names %v", got)
	}

	res := call(t, create, `{"cron":"*/5 * * * *","prompt":"check the deploy"}`)
	if res.IsError {
		t.Fatalf("CronCreate: %s", res.ResultText())
	}
	out := res.Output.(cron.CreateOutput)
	if !out.Recurring || out.Durable || out.HumanSchedule != "every 5 minutes" || !strings.Contains(res.ResultText(), "Scheduled job "+out.ID) {
		t.Errorf("CronCreate with Claude Code's defaults: %+v, %q", out, res.ResultText())
	}
	at := time.Now().Add(time.Hour).Format(time.RFC3339)
	res = call(t, create, `{"cron":"`+at+`","prompt":"remind me","durable":true}`)
	if res.IsError || res.Output.(cron.CreateOutput).Recurring {
		t.Fatalf("CronCreate with a time: %s, want a one-shot job", res.ResultText())
	}
	once := res.Output.(cron.CreateOutput).ID

	res = call(t, list, `{}`)
	if res.IsError || !strings.Contains(res.ResultText(), out.ID+"  every 5 minutes (recurring)") ||
		!strings.Contains(res.ResultText(), once+"  once at") || !strings.Contains(res.ResultText(), "(one-shot, durable)") {
		t.Fatalf("CronList: %q", res.ResultText())
	}

	res = call(t, del, `{"id":"`+out.ID+`"}`)
	if res.IsError || res.ResultText() != "Deleted scheduled job "+out.ID+"." {
		t.Fatalf("CronDelete: %q", res.ResultText())
	}
	if res = call(t, list, `{}`); strings.Contains(res.ResultText(), out.ID) {
		t.Errorf("CronList after delete still shows it: %q", res.ResultText())
	}
}

func TestToolsBadInputIsAnErrorResult(t *testing.T) {
	st, _ := openStore(t, t.TempDir(), nil)
	o := origin(t)
	create, _, del := cron.CreateTool(st, o), cron.ListTool(st, o), cron.DeleteTool(st, o)
	elsewhere := o
	elsewhere.Cwd += "-other"
	res := call(t, cron.CreateTool(st, elsewhere), `{"cron":"@daily","prompt":"theirs"}`)
	if res.IsError {
		t.Fatal(res.ResultText())
	}
	theirs := res.Output.(cron.CreateOutput).ID
	past := time.Now().Add(-time.Hour).Format(time.RFC3339)
	for _, tc := range []struct {
		tool  tool.Tool
		input string
		want  string
	}{
		{create, `{"cron":"every morning","prompt":"p"}`, `want a 5-field cron expression`},
		{create, `{"cron":"0 9 * * *"}`, `missing properties: ["prompt"]`},
		{create, `{"cron":"` + past + `","prompt":"p"}`, "is in the past"},
		{create, `{"cron":"` + time.Now().Add(time.Hour).Format(time.RFC3339) + `","prompt":"p","recurring":true}`, "set recurring to false"},
		{create, `{"cron":"0 9 * * *","prompt":"p","schedule":"x"}`, "schedule"},
		{del, `{"id":"nope"}`, "No scheduled job with id nope in this project"},
		{del, `{"id":"` + theirs + `"}`, "No scheduled job with id " + theirs + " in this project"},
		{del, `{}`, `missing properties: ["id"]`},
	} {
		res := call(t, tc.tool, tc.input)
		if !res.IsError || !strings.Contains(res.ResultText(), tc.want) {
			t.Errorf("%s %s: %q (error %v), want an error containing %q", tc.tool.Name(), tc.input, res.ResultText(), res.IsError, tc.want)
		}
	}
	if jobs, _ := st.List(t.Context()); len(jobs) != 1 {
		t.Errorf("after bad input: %d jobs, want only the other project's", len(jobs))
	}
}

// TestCreateUndoneWhenNothingRunsIt: a job whose scheduler cannot be started is deleted again
// and the model is told why: nothing half done.
func TestCreateUndoneWhenNothingRunsIt(t *testing.T) {
	st, _ := openStore(t, t.TempDir(), nil)
	o := origin(t)
	tools := cron.ToolsWith(st, o, func(context.Context) error { return errors.New("no keel binary") })
	res := call(t, tools[0], `{"cron":"@daily","prompt":"check"}`)
	if !res.IsError || !strings.Contains(res.ResultText(), "no job was scheduled") || !strings.Contains(res.ResultText(), "no keel binary") {
		t.Fatalf("CronCreate with no scheduler: %q", res.ResultText())
	}
	if jobs, err := st.List(t.Context()); err != nil || len(jobs) != 0 {
		t.Errorf("jobs left after a failed create: %+v, %v", jobs, err)
	}
}
