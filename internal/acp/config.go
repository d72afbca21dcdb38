package acp

import (
	"context"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/lazy"
)

// The session's config options: the model and the reasoning effort.
const (
	optionModel  = "model"
	optionEffort = "effort"
	effortOff    = "off"
)

// modeList are keel's permission modes, as the editor's mode picker shows them.
var modeList = lazy.Value[[]sdk.SessionMode]{New: func() []sdk.SessionMode {
	return []sdk.SessionMode{
		{Id: sdk.SessionModeId(keel.ModeDefault), Name: "Default", Description: sdk.Ptr("Ask before edits and commands the rules leave open")},
		{Id: sdk.SessionModeId(keel.ModeAcceptEdits), Name: "Accept edits", Description: sdk.Ptr("Edit files in the working directories without asking")},
		{Id: sdk.SessionModeId(keel.ModePlan), Name: "Plan", Description: sdk.Ptr("Read and plan; change nothing")},
		{Id: sdk.SessionModeId(keel.ModeDontAsk), Name: "Don't ask", Description: sdk.Ptr("Deny what the rules do not allow, without asking")},
		{Id: sdk.SessionModeId(keel.ModeBypassPermissions), Name: "Bypass permissions", Description: sdk.Ptr("Run everything the deny rules do not forbid")},
	}
}}

func (s *session) modes() *sdk.SessionModeState {
	return &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(s.ks.PermissionMode()), AvailableModes: modeList.Get()}
}

func (s *session) setMode(mode string) error {
	if !slices.ContainsFunc(modeList.Get(), func(m sdk.SessionMode) bool { return string(m.Id) == mode }) {
		return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("mode %q is not one of default, acceptEdits, plan, dontAsk, bypassPermissions", mode)})
	}
	if err := s.ks.SetPermissionMode(keel.PermissionMode(mode)); err != nil {
		return sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	s.update(context.Background(), sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(mode)}})
	return nil
}

// modelChoices are the models the picker offers: the current one, then each alias's model.
func (s *session) modelChoices() []sdk.SessionConfigSelectOption {
	current := s.ks.Model()
	opts := []sdk.SessionConfigSelectOption{{Value: sdk.SessionConfigValueId(current), Name: current}}
	byID := map[string]int{current: 0}
	for _, alias := range keel.ModelAliases() {
		id := s.ks.ResolveModel(alias)
		if i, ok := byID[id]; ok {
			if !strings.Contains(opts[i].Name, "(") && opts[i].Name == id {
				opts[i].Name = alias + " (" + id + ")"
			}
			continue
		}
		byID[id] = len(opts)
		opts = append(opts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(id), Name: alias + " (" + id + ")"})
	}
	return opts
}

func (s *session) configOptions() []sdk.SessionConfigOption {
	s.mu.Lock()
	effort := s.effort
	s.mu.Unlock()
	efforts := []sdk.SessionConfigSelectOption{{Value: effortOff, Name: "Off", Description: sdk.Ptr("No extended thinking")}}
	for _, l := range keel.EffortLevels() {
		efforts = append(efforts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(l), Name: l})
	}
	sel := func(id, name string, cat sdk.SessionConfigOptionCategory, current string, opts []sdk.SessionConfigSelectOption) sdk.SessionConfigOption {
		o := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(current), sdk.SessionConfigSelectOptions{Ungrouped: (*sdk.SessionConfigSelectOptionsUngrouped)(&opts)})
		o.Select.Id, o.Select.Name, o.Select.Category = sdk.SessionConfigId(id), name, sdk.Ptr(cat)
		return o
	}
	return []sdk.SessionConfigOption{
		sel(optionModel, "Model", sdk.SessionConfigOptionCategoryModel, s.ks.Model(), s.modelChoices()),
		sel(optionEffort, "Effort", sdk.SessionConfigOptionCategoryThoughtLevel, effort, efforts),
	}
}

// models is the unstable model state (session/set_model) that editors read before config
// options existed.
func (s *session) models() *sdk.SessionModelState {
	st := &sdk.SessionModelState{CurrentModelId: sdk.ModelId(s.ks.Model())}
	for _, c := range s.modelChoices() {
		st.AvailableModels = append(st.AvailableModels, sdk.ModelInfo{ModelId: sdk.ModelId(c.Value), Name: c.Name})
	}
	return st
}

func (s *session) setOption(id, value string) error {
	switch id {
	case optionModel:
		choices := s.modelChoices()
		if !slices.ContainsFunc(choices, func(c sdk.SessionConfigSelectOption) bool { return string(c.Value) == value }) {
			return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("model %q is not one of %s", value, valueList(choices))})
		}
		s.ks.SetModel(value)
	case optionEffort:
		if err := s.ks.SetEffort(value); err != nil {
			return sdk.NewInvalidParams(map[string]any{"error": err.Error()})
		}
		s.mu.Lock()
		s.effort = value
		s.mu.Unlock()
	default:
		return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("config option %q is not one of %s, %s", id, optionModel, optionEffort)})
	}
	return nil
}

func valueList(opts []sdk.SessionConfigSelectOption) string {
	vals := make([]string, len(opts))
	for i, o := range opts {
		vals[i] = string(o.Value)
	}
	return strings.Join(vals, ", ")
}

// builtinCommands are keel's own slash commands.
var builtinCommands = []sdk.AvailableCommand{
	{Name: "compact", Description: "Summarise the conversation and continue from the summary", Input: hint("what the summary should keep")},
	{Name: "clear", Description: "Start the conversation over"},
	{Name: "add-dir", Description: "Add a working directory", Input: hint("directory")},
}

func hint(h string) *sdk.AvailableCommandInput {
	return &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: h}}
}

// announceCommands tells the client keel's slash commands and the session's skills.
func (s *session) announceCommands() {
	cmds := slices.Clone(builtinCommands)
	for _, sk := range s.ks.Skills() {
		if sk.UserInvocable {
			cmds = append(cmds, sdk.AvailableCommand{Name: sk.Name, Description: sk.Description, Input: hint("arguments")})
		}
	}
	s.update(context.Background(), sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: cmds}})
}
