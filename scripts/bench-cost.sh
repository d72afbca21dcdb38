#!/usr/bin/env bash
# Cost of the same scripted work with keel and with Claude Code, side by side: each harness
# runs one headless prompt against its own scripted model server on 127.0.0.1, and the
# server's prompt-cache accounting of every request is priced at the model's rates
# (scripts/costbench). Scenarios: 20 and 50 turns of Reads, and 30 mixed turns (Read, Grep,
# Edit, a Bash test run with long output). Installs the pinned Agent SDK with its native
# Claude Code binary (about 360 MB) into .cache/agent-sdk-bench first, as bench-sdk.sh does.
# -provider-clearing adds a row keel-api: keel with "clearToolResults": "provider", the scripted
# server clearing old tool results itself as Anthropic's context editing does.
# Example: scripts/bench-cost.sh                      (all three scenarios)
#          scripts/bench-cost.sh -scenarios reads-100 (any reads-N or mixed-N)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sdk-bench-setup.sh
claude="$(ls "$dir"/node_modules/@anthropic-ai/claude-agent-sdk-linux-*/claude 2>/dev/null | head -1)"
if [ -z "$claude" ]; then
  echo "warning: the SDK package brought no native Claude Code binary for this platform; measuring keel alone" >&2
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/keel" ./cmd/keel  # as make build does
go build -o "$work/costbench" ./scripts/costbench
"$work/costbench" -keel "$work/keel" ${claude:+-claude "$claude"} "$@"
