#!/usr/bin/env bash
# Measures keel against the Claude Code that ships inside the Agent SDK package, driven by the
# same SDK: the wall time of one query() turn and the peak RSS of the CLI process, with the same
# scripted model on 127.0.0.1, in one run on one machine. Installs the pinned SDK with its native
# Claude Code binary (about 360 MB) into .cache/agent-sdk-bench first.
# Example: scripts/bench-sdk.sh 20   (20 alternating runs of each; default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
dir="$PWD/.cache/agent-sdk-bench"
if [ ! -f "$dir/.installed" ] || ! cmp -s scripts/agent-sdk.txt "$dir/.installed"; then
  mkdir -p "$dir"
  echo "installing the Agent SDK and its Claude Code binary into $dir" >&2
  (cd "$dir" && npm install --silent --no-audit --no-fund --prefix . $(grep -v '^#' "$OLDPWD/scripts/agent-sdk.txt") >/dev/null)
  cp scripts/agent-sdk.txt "$dir/.installed"
fi
work="$(mktemp -d)"
trap 'kill $(cat "$work/scripted.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/keel" ./cmd/keel
cat > "$work/scenario.yaml" <<'YAML'
fallback:
  reply:
    - text: Hello from the scripted model.
YAML
port=$((20000 + RANDOM % 20000))
"$work/keel" scripted "$work/scenario.yaml" --addr "127.0.0.1:$port" 2>"$work/scripted.log" &
echo $! > "$work/scripted.pid"
for _ in $(seq 100); do grep -q listening "$work/scripted.log" 2>/dev/null && break; read -rt 0.05 < <(:) || true; done
KEEL_AGENT_SDK="$dir" KEEL_BIN="$work/keel" BENCH_WORK="$work" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" \
  node scripts/bench-sdk.mjs "$runs"
