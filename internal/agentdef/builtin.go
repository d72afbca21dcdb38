package agentdef

import (
	"embed"
	"fmt"

	"github.com/keel-dev/keel/internal/lazy"
)

//go:embed builtin/*.md
var builtinFS embed.FS

// builtinNames lists the built-in agents in the order they are offered.
var builtinNames = []string{"general-purpose", "Explore", "Plan", "verification"}

// oneShot are the built-ins that report once and are never messaged again.
var oneShot = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{"Explore": true, "Plan": true}
}}

// Builtins returns fresh copies of the built-in agents: general-purpose, Explore (read-only
// search), Plan (read-only planning) and verification. They are written in keel's own agent
// format and parsed like any other file.
func Builtins() []*Definition {
	defs := make([]*Definition, 0, len(builtinNames))
	for _, name := range builtinNames {
		data, err := builtinFS.ReadFile("builtin/" + name + ".md")
		if err != nil {
			panic(fmt.Sprintf("agentdef: built-in %s: %v", name, err))
		}
		def, diags := ParseMarkdown("builtin/"+name+".md", data)
		if def == nil || len(diags) > 0 {
			panic(fmt.Sprintf("agentdef: built-in %s does not parse cleanly: %v", name, diags))
		}
		def.Source, def.Path, def.OneShot = SourceBuiltin, "", oneShot.Get()[name]
		defs = append(defs, def)
	}
	return defs
}
