# keel's make targets. `make test` is the one command that runs the whole suite on a fresh
# machine: it installs what the tests need, then runs go vet, staticcheck and the race-enabled tests.

.PHONY: test build bench demo

test:
	./scripts/test.sh

build:
	go build -o bin/ ./cmd/keel ./cmd/keel-tui

bench:
	./scripts/bench.sh

demo:
	go run ./cmd/keel demo
