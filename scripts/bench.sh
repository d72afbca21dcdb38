#!/usr/bin/env bash
# Runs keel's benchmarks: installs ripgrep first (the Grep benchmark compares the built-in
# walker with it), then go test -bench over the packages given (default: all of them). With no
# packages given it then measures against Claude Code: cost per task (bench-cost.sh), start-up
# (bench-startup.sh) and 40 concurrent SDK sessions (bench-sessions.sh).
# Example: scripts/bench.sh ./internal/builtin   (Grep over a generated 100,000-file tree)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v rg >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep >/dev/null
  else
    echo "warning: ripgrep is missing; the Grep benchmark measures the built-in walker only" >&2
  fi
fi
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
go test -run '^$' -bench . -benchmem "${pkgs[@]}"
if [ $# -eq 0 ]; then
  for b in bench-cost.sh bench-startup.sh bench-sessions.sh; do
    [ -x "scripts/$b" ] && "scripts/$b"
  done
fi
