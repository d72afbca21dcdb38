#!/usr/bin/env bash
# keel --version against a plain Go hello-world built by the same toolchain: mean wall time
# over N runs each (alternating batches) and the median peak RSS of 11 runs each.
# Example: scripts/bench-startup.sh 200   (default 200 runs each)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-200}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/keel" ./cmd/keel  # as make build does
mkdir "$work/hello"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' > "$work/hello/main.go"
printf 'module hello\n\ngo 1.22\n' > "$work/hello/go.mod"
(cd "$work/hello" && go build -o "$work/hello-bin" .)
mean_us() { # command… : mean wall microseconds of $runs runs
  local s e
  s=$(date +%s%N)
  for _ in $(seq "$runs"); do "$@" >/dev/null; done
  e=$(date +%s%N)
  echo $(( (e - s) / runs / 1000 ))
}
median_rss() { # command… : median peak RSS (KiB) of 11 runs
  for _ in $(seq 11); do /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1; done | sort -n | sed -n 6p
}
h1=$(mean_us "$work/hello-bin"); k1=$(mean_us "$work/keel" --version)
h2=$(mean_us "$work/hello-bin"); k2=$(mean_us "$work/keel" --version)
hw=$(( (h1 + h2) / 2 )); kw=$(( (k1 + k2) / 2 ))
hr=$(median_rss "$work/hello-bin"); kr=$(median_rss "$work/keel" --version)
echo "keel --version against a Go hello-world, $runs runs each (twice, alternating)"
echo "hello-world     wall ${hw} us   peak RSS $((hr / 1024)).$(( (hr % 1024) * 10 / 1024 )) MiB"
echo "keel --version  wall ${kw} us   peak RSS $((kr / 1024)).$(( (kr % 1024) * 10 / 1024 )) MiB"
awk -v k="$kw" -v h="$hw" 'BEGIN { printf "keel/hello wall ratio %.2f\n", k / h }'
