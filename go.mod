module github.com/keel-dev/keel

go 1.26.0

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/google/go-cmp v0.7.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
)

require golang.org/x/text v0.14.0 // indirect
