module github.com/keel-dev/keel

go 1.26.0

require github.com/google/go-cmp v0.7.0

require github.com/google/uuid v1.6.0
