package keel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/keel-dev/keel/internal/message"
)

// Every event a session emits has a public twin with the same fields, so a field added to
// one side and not the other fails here: the internal value survives a trip through the
// public type and back, and so does a public one the other way.
func TestPublicEventsHaveEveryField(t *testing.T) {
	for internal, public := range publicEvents.Get() {
		roundTrip(t, internal, public)
		roundTrip(t, public, internal)
	}
	roundTrip(t, reflect.TypeFor[message.Usage](), reflect.TypeFor[Usage]())
	roundTrip(t, reflect.TypeFor[Usage](), reflect.TypeFor[message.Usage]())
	// A block's cache marker exists only inside an outgoing request: never in history, so
	// never in an event.
	var m message.Message
	fill(reflect.ValueOf(&m).Elem())
	message.StripCacheControl(m.Content)
	back := convert[message.Message](convert[Message](m))
	if diff := cmp.Diff(m, back); diff != "" {
		t.Errorf("message lost in the public form (-want +got):\n%s", diff)
	}
}

func roundTrip(t *testing.T, from, via reflect.Type) {
	t.Helper()
	orig := reflect.New(from).Elem()
	fill(orig)
	mid := reflect.New(via).Elem()
	copyValue(mid, orig)
	back := reflect.New(from).Elem()
	copyValue(back, mid)
	// A block's cache marker exists only inside an outgoing request, never in an event.
	if diff := cmp.Diff(orig.Interface(), back.Interface(), cmpopts.IgnoreFields(message.Block{}, "CacheControl")); diff != "" {
		t.Errorf("%s lost fields through %s (-want +got):\n%s", from, via, diff)
	}
}

// Every event type of internal/event (a struct embedding Origin) is public.
func TestEveryEventIsPublic(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("internal", "event", "event.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for internal := range publicEvents.Get() {
		known[internal.Name()] = true
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range g.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok || len(st.Fields.List) == 0 || len(st.Fields.List[0].Names) != 0 || exprName(st.Fields.List[0].Type) != "Origin" {
				continue
			}
			n++
			if !known[ts.Name.Name] {
				t.Errorf("event.%s has no public twin in publicEvents", ts.Name.Name)
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d event types; the test is not reading internal/event", n)
	}
}

func exprName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
