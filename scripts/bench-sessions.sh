#!/usr/bin/env bash
# Many concurrent Agent SDK sessions on keel and on the Claude Code that ships inside the SDK
# package, against the same scripted model on 127.0.0.1, in one run: the summed peak RSS of
# the CLI processes, their CPU time and the queries per minute (scripts/bench-sessions.mjs).
# Installs the pinned SDK with its native Claude Code binary (about 360 MB) into
# .cache/agent-sdk-bench first, as bench-sdk.sh does. Claude Code needs about 190 MiB a session.
# Example: scripts/bench-sessions.sh 40 5   (40 sessions of 5 queries each; the default)
#          KEEL_BASELINE_BIN=/path/to/old/keel scripts/bench-sessions.sh   (also that build, same run)
set -euo pipefail
cd "$(dirname "$0")/.."
sessions="${1:-40}"
turns="${2:-5}"
SDK_BENCH_SERVE=1 source scripts/sdk-bench-setup.sh
KEEL_AGENT_SDK="$dir" KEEL_BIN="$work/keel" KEEL_BASELINE_BIN="${KEEL_BASELINE_BIN:-}" BENCH_WORK="$work" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" \
  node scripts/bench-sessions.mjs "$sessions" "$turns"
