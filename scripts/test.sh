#!/usr/bin/env bash
# Runs keel's whole test suite on a fresh machine: installs what the tests use (ripgrep for the
# Grep parity test, tmux for the terminal end-to-end tests, the MCP reference servers and the
# Agent SDK from npm into cache directories), then go vet, staticcheck and go test -race.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v rg >/dev/null 2>&1 || need_apt+=(ripgrep)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
command -v git >/dev/null 2>&1 || need_apt+=(git)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need_apt[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "warning: ${need_apt[*]} missing and cannot be installed here; the tests that need them will say so" >&2
  fi
fi

# MCP reference servers, pinned, installed once into a cache the tests find via KEEL_NPM_CACHE.
npm_dir="${KEEL_NPM_CACHE:-$PWD/.cache/npm}"
if command -v npm >/dev/null 2>&1 && [ -f scripts/npm-servers.txt ]; then
  if [ ! -f "$npm_dir/.installed" ] || ! cmp -s scripts/npm-servers.txt "$npm_dir/.installed"; then
    mkdir -p "$npm_dir"
    echo "installing MCP reference servers into $npm_dir"
    (cd "$npm_dir" && npm install --silent --no-audit --no-fund --prefix . $(grep -v '^#' "$OLDPWD/scripts/npm-servers.txt") >/dev/null)
    cp scripts/npm-servers.txt "$npm_dir/.installed"
  fi
  export KEEL_NPM_CACHE="$npm_dir"
fi

# The Agent SDK (TypeScript) the SDK suite drives keel with, pinned, installed once into a
# cache; its optional native Claude Code binary is not needed and not installed.
sdk_dir="${KEEL_AGENT_SDK:-$PWD/.cache/agent-sdk}"
if command -v npm >/dev/null 2>&1 && [ -f scripts/agent-sdk.txt ]; then
  if [ ! -f "$sdk_dir/.installed" ] || ! cmp -s scripts/agent-sdk.txt "$sdk_dir/.installed"; then
    mkdir -p "$sdk_dir"
    echo "installing the Agent SDK into $sdk_dir"
    (cd "$sdk_dir" && npm install --silent --no-audit --no-fund --omit=optional --prefix . $(grep -v '^#' "$OLDPWD/scripts/agent-sdk.txt") >/dev/null)
    cp scripts/agent-sdk.txt "$sdk_dir/.installed"
  fi
  export KEEL_AGENT_SDK="$sdk_dir"
fi

go vet ./...
go tool staticcheck ./...
go test -race -count=1 "$@" ./...
