#!/usr/bin/env bash
# keel --version against a plain Go hello-world built by the same toolchain: mean wall time
# over N runs each (ten alternating rounds, medians) and the median peak RSS of 11 runs each.
# Example: scripts/bench-startup.sh 200   (default 200 runs each)
#          KEEL_BIN=/path/to/keel scripts/bench-startup.sh   (that binary instead of a fresh build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-200}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -n "${KEEL_BIN:-}" ]; then
  cp "$KEEL_BIN" "$work/keel"  # another build, e.g. an older commit's, measured the same way
else
  CGO_ENABLED=0 go build -o "$work/keel" ./cmd/keel  # as make build does
fi
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
# Ten alternating rounds of runs/10 each: on a shared machine the load changes by the second,
# so the wall ratio is the median of the rounds' ratios, each from runs made side by side.
rounds=10
per=$(( runs / rounds > 0 ? runs / rounds : 1 ))
ratios=() hs=() ks=()
for _ in $(seq "$rounds"); do
  h=$(runs=$per mean_us "$work/hello-bin"); k=$(runs=$per mean_us "$work/keel" --version)
  hs+=("$h"); ks+=("$k"); ratios+=("$(awk -v k="$k" -v h="$h" 'BEGIN { printf "%.3f", k / h }')")
done
median() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }
hw=$(median "${hs[@]}"); kw=$(median "${ks[@]}"); ratio=$(median "${ratios[@]}")
hr=$(median_rss "$work/hello-bin"); kr=$(median_rss "$work/keel" --version)
echo "keel --version against a Go hello-world, $runs runs each ($rounds alternating rounds; medians)"
echo "hello-world     wall ${hw} us   peak RSS $((hr / 1024)).$(( (hr % 1024) * 10 / 1024 )) MiB"
echo "keel --version  wall ${kw} us   peak RSS $((kr / 1024)).$(( (kr % 1024) * 10 / 1024 )) MiB"
echo "keel/hello wall ratio $ratio (median of the rounds' ratios); load average $(cut -d' ' -f1-3 /proc/loadavg)"
