// Package lazy holds values built on first use whose declarations cost package initialisation
// nothing. A package-level sync.OnceValue(…) is itself init work (two allocations and the
// package's init function run at every start); a composite literal of Value or Regexp is laid
// out by the linker, so a package whose tables are all declared this way has no init function
// at all, and keel --version never touches its code pages.
package lazy

import (
	"regexp"
	"sync"
)

// Value is the result of New, computed once, on the first Get. Declare it as a composite
// literal with a func literal that captures nothing, so the compiler initialises it statically:
//
//	var table = lazy.Value[map[string]int]{New: func() map[string]int { return …}}
type Value[T any] struct {
	New  func() T
	once sync.Once
	v    T
}

// Get returns the value, building it on the first call; it is safe for concurrent use.
func (l *Value[T]) Get() T {
	l.once.Do(l.build)
	return l.v
}

func (l *Value[T]) build() { l.v = l.New() }

// Regexp is Expr compiled on the first Get (regexp.MustCompile: an invalid expression panics
// there, as it would have at init).
//
//	var nameRE = lazy.Regexp{Expr: `^[a-z]+$`}
type Regexp struct {
	Expr string
	once sync.Once
	re   *regexp.Regexp
}

// Get returns the compiled expression; it is safe for concurrent use.
func (l *Regexp) Get() *regexp.Regexp {
	l.once.Do(l.compile)
	return l.re
}

func (l *Regexp) compile() { l.re = regexp.MustCompile(l.Expr) }
