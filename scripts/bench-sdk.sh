#!/usr/bin/env bash
# Measures keel against the Claude Code that ships inside the Agent SDK package, driven by the
# same SDK: the wall time of one query() turn and the peak RSS of the CLI process, with the same
# scripted model on 127.0.0.1, in one run on one machine. Installs the pinned SDK with its native
# Claude Code binary (about 360 MB) into .cache/agent-sdk-bench first.
# Example: scripts/bench-sdk.sh 20   (20 alternating runs of each; default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
SDK_BENCH_SERVE=1 source scripts/sdk-bench-setup.sh
KEEL_AGENT_SDK="$dir" KEEL_BIN="$work/keel" BENCH_WORK="$work" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" \
  node scripts/bench-sdk.mjs "$runs"
