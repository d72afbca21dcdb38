#!/usr/bin/env bash
# Many concurrent Agent SDK sessions on keel and on the Claude Code that ships inside the SDK
# package, against the same scripted model on 127.0.0.1, in one run: the summed peak RSS of
# the CLI processes, their CPU time and the queries per minute (scripts/bench-sessions.mjs).
# Installs the pinned SDK with its native Claude Code binary (about 360 MB) into
# .cache/agent-sdk-bench first, as bench-sdk.sh does. Claude Code needs about 190 MiB a session.
# Example: scripts/bench-sessions.sh 40 5   (40 sessions of 5 queries each; the default)
set -euo pipefail
cd "$(dirname "$0")/.."
sessions="${1:-40}"
turns="${2:-5}"
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
  node scripts/bench-sessions.mjs "$sessions" "$turns"
