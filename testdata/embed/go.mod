// An example of embedding keel from outside its module: built and tested by keel's own
// TestExternalModule (embed_test.go in the repository root), which points the replace below
// at the checkout under test.
module example.com/embed

go 1.26.7

require github.com/keel-dev/keel v0.0.0

replace github.com/keel-dev/keel => ../..
