# Sourced by the benchmarks that drive keel and Claude Code through the Agent SDK
# (bench-sdk.sh, bench-sessions.sh, bench-cost.sh). It installs the pinned SDK with its native
# Claude Code binary (about 360 MB) into .cache/agent-sdk-bench once (again when the pin
# changes) and sets $dir to it. With SDK_BENCH_SERVE=1 it also builds keel into $work (or
# copies $KEEL_BIN there), starts keel's scripted model (one fallback answer) on a free port
# of 127.0.0.1 and sets $port; the caller's EXIT trap is set here to stop it and remove $work.
dir="$PWD/.cache/agent-sdk-bench"
if [ ! -f "$dir/.installed" ] || ! cmp -s scripts/agent-sdk.txt "$dir/.installed"; then
  mkdir -p "$dir"
  echo "installing the Agent SDK and its Claude Code binary into $dir" >&2
  (cd "$dir" && npm install --silent --no-audit --no-fund --prefix . $(grep -v '^#' "$OLDPWD/scripts/agent-sdk.txt") >/dev/null)
  cp scripts/agent-sdk.txt "$dir/.installed"
fi
if [ "${SDK_BENCH_SERVE:-}" = 1 ]; then
  work="$(mktemp -d)"
  trap 'kill $(cat "$work/scripted.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
  if [ -n "${KEEL_BIN:-}" ]; then
    cp "$KEEL_BIN" "$work/keel"  # another build, e.g. an older commit's
  else
    CGO_ENABLED=0 go build -o "$work/keel" ./cmd/keel  # as make build does
  fi
  cat > "$work/scenario.yaml" <<'YAML'
fallback:
  reply:
    - text: Hello from the scripted model.
YAML
  port=$((20000 + RANDOM % 20000))
  "$work/keel" scripted "$work/scenario.yaml" --addr "127.0.0.1:$port" 2>"$work/scripted.log" &
  echo $! > "$work/scripted.pid"
  for _ in $(seq 100); do grep -q listening "$work/scripted.log" 2>/dev/null && break; read -rt 0.05 < <(:) || true; done
fi
