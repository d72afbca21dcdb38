package keel

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/runconfig"
)

// fill sets every field of v (a struct, through pointers) to a value that is not zero;
// recursive types (a block's content) are filled two levels deep.
func fill(v reflect.Value) { fillDepth(v, 0) }

func fillDepth(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	fill := func(v reflect.Value) { fillDepth(v, depth+1) }
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(time.Second))
		} else {
			v.SetInt(3)
		}
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		val := reflect.New(v.Type().Elem()).Elem()
		fill(val)
		key := reflect.New(v.Type().Key()).Elem()
		fill(key)
		v.SetMapIndex(key, val)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(`{"type":"object"}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	}
}

// A whole configuration handed over as Options.Config reaches the session unchanged: the
// terminal UI gets every flag of the command line that way.
func TestOptionsConfigCarriesEveryField(t *testing.T) {
	var want runconfig.Config
	fill(reflect.ValueOf(&want).Elem())
	raw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Options{Config: raw}.config()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configuration lost on its way through Options.Config (-want +got):\n%s", diff)
	}
}

// Every option that is configuration reaches the run configuration, and wins over a base
// configuration given in Options.Config.
func TestEveryOptionReachesTheConfiguration(t *testing.T) {
	seams := map[string]bool{"APIKey": true, "Tools": true, "Getenv": true, "Ask": true, "Elicit": true, "MCPServers": true,
		"MCPAuthorize": true, "Logger": true, "TeammateCommand": true, "Config": true}
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if seams[f.Name] {
			continue
		}
		var opts Options
		fill(reflect.ValueOf(&opts).Elem().Field(i))
		got, err := opts.config()
		if err != nil {
			t.Fatal(err)
		}
		if reflect.DeepEqual(got, runconfig.Config{}) {
			t.Errorf("Options.%s does not reach the session's configuration", f.Name)
		}
	}
	base, _ := json.Marshal(runconfig.Config{Model: "from-base", Cwd: "/base", Continue: true})
	got, err := Options{Config: base, Model: "explicit", Resume: "r1"}.config()
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "explicit" || got.Cwd != "/base" || got.Resume != "r1" || got.Continue {
		t.Errorf("Options over a base configuration: %+v; want the explicit model and resume, the base's cwd, no continue", got)
	}
}

// The public mode constants are the run's permission modes, no more and no fewer: a mode the
// settings accept has a name an embedder can use.
func TestPermissionModeConstantsAreTheRunsModes(t *testing.T) {
	var got []string
	for _, m := range []PermissionMode{ModeDefault, ModeAcceptEdits, ModePlan, ModeDontAsk, ModeBypassPermissions, ModeAuto} {
		got = append(got, string(m))
	}
	if want := runconfig.PermissionModes(); !cmp.Equal(got, want) {
		t.Errorf("keel's permission modes %q, the run's %q", got, want)
	}
}
