# keel's make targets. `make test` is the one command that runs the whole suite on a fresh
# machine: it installs what the tests need, then runs go vet, staticcheck and the race-enabled tests.

.PHONY: test test-stress build bench demo

test:
	./scripts/test.sh

# The whole suite under a CPU hog on every core, -race -count=3 and once with GOMAXPROCS=1;
# names each flaky test. Slow, so not part of `make test`.
test-stress:
	./scripts/stress.sh

# Statically linked (CGO_ENABLED=0): keel uses no C code, and a binary without the dynamic
# loader starts in about 2 ms less and 2 MiB of RSS less (README, "Installing").
build:
	CGO_ENABLED=0 go build -o bin/ ./cmd/keel ./cmd/keel-tui ./cmd/keel-nats ./cmd/keel-otel ./cmd/keel-sandbox ./cmd/keel-web

bench:
	./scripts/bench.sh

demo:
	go run ./cmd/keel demo
