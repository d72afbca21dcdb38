#!/usr/bin/env bash
# Runs keel's whole test suite on a fresh machine: installs what the tests use (ripgrep for the
# Grep parity test, tmux for the terminal end-to-end tests, bash for the differential fuzz of
# the permission engine's shell parser, the MCP reference servers from npm into a cache
# directory), then go vet, staticcheck and go test -race.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v rg >/dev/null 2>&1 || need_apt+=(ripgrep)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v bash >/dev/null 2>&1 || need_apt+=(bash)
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

go vet ./...
go tool staticcheck ./...
go test -race -count=1 "$@" ./...
