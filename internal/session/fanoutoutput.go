package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/keel-dev/keel/internal/fanout"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/tool"
)

// itemID is a fan-out item's id, as the Agent call with items names it when the summary had
// to be cut: "fanout-<ledger key>/<item number>". TaskOutput takes it as its task_id.
var itemID = lazy.Regexp{Expr: `^fanout-([0-9a-f]{16})/([1-9][0-9]*)$`}

// fanOutOutput is TaskOutput that also answers a fan-out item's id with the item's whole
// result (Session.FanOutItem); every other id goes to the background tasks' TaskOutput. Its
// name, description and schema are TaskOutput's, so the requests do not change.
type fanOutOutput struct {
	tool.Tool
	s *Session
}

// DeferLoading keeps TaskOutput deferred as it was.
func (t fanOutOutput) DeferLoading() bool { return tool.IsDeferred(t.Tool) }

func (t fanOutOutput) Call(ctx context.Context, env *tool.Env, input json.RawMessage) tool.Result {
	var in struct {
		TaskID string `json:"task_id"`
	}
	if json.Unmarshal(input, &in) != nil {
		return t.Tool.Call(ctx, env, input)
	}
	m := itemID.Get().FindStringSubmatch(strings.TrimSpace(in.TaskID))
	if m == nil {
		return t.Tool.Call(ctx, env, input)
	}
	n, _ := strconv.Atoi(m[2])
	it, err := t.s.FanOuts().itemByKey(ctx, m[1], n)
	if err != nil {
		return tool.Errorf("fan-out item %s: %v", in.TaskID, err)
	}
	switch it.State {
	case fanout.StateDone:
		return tool.Result{Content: tool.Text(fmt.Sprintf("Item %d (%s), done:\n%s", it.Index, it.Input, it.Result)).Content, Output: it}
	case fanout.StateFailed:
		return tool.Result{Content: tool.Text(fmt.Sprintf("Item %d (%s) failed: %s", it.Index, it.Input, it.Error)).Content, Output: it}
	}
	return tool.Result{Content: tool.Text(fmt.Sprintf("Item %d (%s) is %s; the same Agent call again resumes the fan-out", it.Index, it.Input, it.State)).Content, Output: it}
}
