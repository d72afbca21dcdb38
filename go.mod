module github.com/keel-dev/keel

go 1.26.0

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/google/go-cmp v0.7.0
	mvdan.cc/sh/v3 v3.14.1
)
