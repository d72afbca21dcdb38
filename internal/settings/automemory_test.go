package settings

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestAutoMemoryEnabled(t *testing.T) {
	l := newLayout(t)
	s, err := Load(l.options())
	if err != nil {
		t.Fatal(err)
	}
	if !s.AutoMemoryOn() {
		t.Error("auto memory is off without settings; want it on by default")
	}
	l.write(t, filepath.Join(l.home, "settings.json"), `{"autoMemoryEnabled": false}`)
	if s, err = Load(l.options()); err != nil || s.AutoMemoryOn() {
		t.Errorf("user settings switch auto memory off: on %v, %v", s.AutoMemoryOn(), err)
	}
	l.write(t, filepath.Join(l.project, ".keel", "settings.local.json"), "{\n  \"autoMemoryEnabled\": \"no\"\n}")
	s, err = Load(l.options()) // the error joins the problems checked below
	if err == nil || s.AutoMemoryOn() {
		t.Errorf("a bad value: err %v, on %v; want an error and the user's false kept", err, s.AutoMemoryOn())
	}
	var problems []string
	for _, p := range s.Problems {
		problems = append(problems, p.Error())
	}
	if got := strings.Join(problems, "\n"); !strings.Contains(got, "settings.local.json:2:24: autoMemoryEnabled is a string, want true or false") {
		t.Errorf("problems: %s", got)
	}
}
