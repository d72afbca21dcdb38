module github.com/keel-dev/keel

go 1.26.0

require (
	github.com/goccy/go-yaml v1.19.2
	github.com/google/go-cmp v0.7.0
)

require github.com/BurntSushi/toml v1.6.0
