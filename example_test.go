package keel_test

import (
	"context"
	"fmt"
	"os"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// Example runs one prompt against keel's scripted model and prints the reply as it streams.
func Example() {
	ctx := context.Background()
	model, _ := scripted.Start(ctx, "", &scripted.Scenario{Rules: []scripted.Rule{
		{Reply: []scripted.Block{scripted.Text("Hello from the model.")}},
	}}, scripted.Options{})
	defer model.Close()
	dir, _ := os.MkdirTemp("", "keel-example-")
	defer os.RemoveAll(dir)

	sess, err := keel.New(ctx, keel.Options{Cwd: dir, Home: dir, BaseURL: model.URL(), APIKey: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	for ev, err := range sess.Send(ctx, "say hello") {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev := ev.(type) {
		case keel.TextDelta:
			fmt.Print(ev.Text)
		case keel.Result:
			fmt.Printf("\n%s after %d turn(s)\n", ev.Subtype, ev.NumTurns)
		}
	}
	// Output:
	// Hello from the model.
	// success after 1 turn(s)
}

// ExampleNewTool offers the model a Go function as a tool.
func ExampleNewTool() {
	type in struct {
		City string `json:"city" jsonschema:"the city to look up"`
	}
	weather, err := keel.NewTool("Weather", "Today's weather in a city.",
		func(ctx context.Context, q in) (string, error) { return "sunny in " + q.City, nil },
		keel.ToolOptions{ReadOnly: true, ConcurrencySafe: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	model, _ := scripted.Start(ctx, "", &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "weather"}, Reply: []scripted.Block{scripted.ToolUse("Weather", map[string]string{"city": "Oslo"})}},
		{When: scripted.Match{ToolResult: "Weather"}, Reply: []scripted.Block{scripted.Text("It is sunny in Oslo.")}},
	}}, scripted.Options{})
	defer model.Close()
	dir, _ := os.MkdirTemp("", "keel-example-")
	defer os.RemoveAll(dir)
	sess, err := keel.New(ctx, keel.Options{Cwd: dir, Home: dir, BaseURL: model.URL(), APIKey: "example", Tools: []keel.Tool{weather}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	for ev := range sess.Send(ctx, "what's the weather?") {
		switch ev := ev.(type) {
		case keel.ToolEnd:
			fmt.Println(ev.Name, "→", ev.Result[0].Text)
		case keel.Result:
			fmt.Println(ev.Text)
		}
	}
	// Output:
	// Weather → sunny in Oslo
	// It is sunny in Oslo.
}
