package tui_test

import (
	"os"
	"testing"
)

func TestCaptureScreen(t *testing.T) {
	if os.Getenv("KEEL_TUI_CAPTURE") == "" {
		t.Skip("set KEEL_TUI_CAPTURE=1")
	}
	srv := startScripted(t, e2eRules...)
	tm := startKeel(t, srv, t.TempDir(), 80, 24)
	tm.waitFor("shift+tab")
	tm.typeText("please say hello")
	tm.keys("Enter")
	tm.waitFor("Hello from the scripted model.")
	tm.typeText("make a file")
	tm.keys("Enter")
	t.Log("\n" + tm.waitFor("Do you want to proceed?"))
	tm.keys("Enter")
	t.Log("\n" + tm.waitFor("The file is there now."))
	tm.typeText("/")
	t.Log("\n" + tm.waitFor("/help"))
}
