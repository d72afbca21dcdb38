package keel_test

import (
	"context"
	"fmt"
	"os"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/keeltest"
)

// Example runs one prompt against a scripted model and prints the reply as it streams.
func Example() {
	ctx := context.Background()
	model, err := keeltest.Start(ctx, keeltest.Rule{Reply: []keeltest.Block{keeltest.Text("Hello from the model.")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer model.Close()
	dir, _ := os.MkdirTemp("", "keel-example-")
	defer os.RemoveAll(dir)

	sess, err := keel.New(ctx, model.Options(dir, dir))
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
	model, err := keeltest.Start(ctx,
		keeltest.Rule{When: keeltest.Match{UserText: "weather"}, Reply: []keeltest.Block{keeltest.ToolUse("Weather", map[string]string{"city": "Oslo"})}},
		keeltest.Rule{When: keeltest.Match{ToolResult: "Weather"}, Reply: []keeltest.Block{keeltest.Text("It is sunny in Oslo.")}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer model.Close()
	dir, _ := os.MkdirTemp("", "keel-example-")
	defer os.RemoveAll(dir)
	opts := model.Options(dir, dir)
	opts.Tools = []keel.Tool{weather}
	sess, err := keel.New(ctx, opts)
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
