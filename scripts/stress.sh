#!/usr/bin/env bash
# Runs keel's whole test suite on a deliberately overloaded machine to find flaky tests: one
# CPU hog per core keeps every core busy while the suite runs with -race -count=3, then once
# more with GOMAXPROCS=1. Each failed test is named at the end, FLAKY when it also passed.
# Exits non-zero when any test failed. Not part of `make test`: it takes a long while.
#
#   make test-stress                       # or scripts/stress.sh [go test flags…] [packages]
#   scripts/stress.sh ./internal/hooks     # stress one package
#   KEEL_STRESS_COUNT=5 make test-stress   # runs per test in the first pass (default 3)
#
# The go test -json streams stay in .cache/stress/ for a closer look.
set -euo pipefail
cd "$(dirname "$0")/.."

# Install what the tests need and build every test binary before the hog starts, so the
# passes time tests, not compiles (-run '^$' runs no test).
./scripts/test.sh -run '^$' >/dev/null
npm_dir="${KEEL_NPM_CACHE:-$PWD/.cache/npm}"
[ -d "$npm_dir" ] && export KEEL_NPM_CACHE="$npm_dir"

args=("$@")
has_pkgs=0
for a in "${args[@]}"; do
  case "$a" in ./* | github.com/*) has_pkgs=1 ;; esac
done
[ "$has_pkgs" = 1 ] || args+=(./...)

out=.cache/stress
mkdir -p "$out"
rm -f "$out"/*.json

hogs=()
stop_hogs() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop_hogs EXIT
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
for _ in $(seq "$cores"); do
  sh -c 'while :; do :; done' &
  hogs+=($!)
done
echo "stress: $cores CPU hogs running (pids ${hogs[*]})"

# A test binary runs its package's tests count times in a row on a starved machine: the
# default 10-minute limit per binary is too short for that.
count="${KEEL_STRESS_COUNT:-3}"
pass() {
  local name=$1
  shift
  local start=$SECONDS
  echo "stress: $name: go test $*"
  go test -json -timeout 60m "$@" >"$out/$name.json" 2>"$out/$name.stderr" || true
  echo "stress: $name took $((SECONDS - start))s"
}
pass "count$count" -race -count="$count" "${args[@]}"
# GOMAXPROCS=1 also sets go test's default -p: without -p the packages would run one at a time.
GOMAXPROCS=1 pass gomaxprocs1 -race -count=1 -p "$cores" "${args[@]}"
stop_hogs
trap - EXIT

for f in "$out"/*.stderr; do
  [ -s "$f" ] && { echo "stress: $f:"; cat "$f"; }
done
go run ./internal/testreport "$out/count$count.json" "$out/gomaxprocs1.json"
