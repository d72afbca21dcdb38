package lazy

import (
	"sync"
	"testing"
)

// A Value builds once however many goroutines ask at the same time, and every caller sees
// the one result.
func TestValueBuildsOnce(t *testing.T) {
	var calls int
	v := Value[*int]{New: func() *int { calls++; n := 42; return &n }}
	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Go(func() { got[i] = v.Get() })
	}
	wg.Wait()
	if calls != 1 {
		t.Fatalf("New ran %d times, want 1", calls)
	}
	for i, p := range got {
		if p != got[0] || *p != 42 {
			t.Fatalf("caller %d got %v, want the one value 42", i, p)
		}
	}
}

func TestRegexpCompilesOnFirstUse(t *testing.T) {
	re := Regexp{Expr: `^a[0-9]+$`}
	if re.re != nil {
		t.Fatal("compiled before first use")
	}
	if !re.Get().MatchString("a12") || re.Get().MatchString("b12") {
		t.Fatalf("%q matches wrongly", re.Expr)
	}
	first := re.Get()
	if second := re.Get(); second != first {
		t.Fatal("compiled more than once")
	}
}

// An invalid expression panics at first use, as regexp.MustCompile at init would have.
func TestRegexpInvalidPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an invalid expression")
		}
	}()
	re := Regexp{Expr: `(`}
	re.Get()
}
