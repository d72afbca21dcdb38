#!/usr/bin/env bash
# Runs keel's whole test suite on a fresh machine: installs what the tests use (ripgrep for the
# Grep parity test, tmux for the terminal end-to-end tests, Jupyter's nbformat to validate
# notebook edits, the MCP reference servers and the MCP conformance suite with its node from
# npm and a pinned gopls into cache directories), then go vet, staticcheck and go test -race.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v rg >/dev/null 2>&1 || need_apt+=(ripgrep)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
command -v git >/dev/null 2>&1 || need_apt+=(git)
/usr/bin/python3 -c 'import nbformat' >/dev/null 2>&1 || need_apt+=(python3-nbformat)
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

# The MCP conformance suite and the node (>= 22) it needs, both pinned, from npm, once.
conf_dir="${KEEL_CONFORMANCE_DIR:-$PWD/.cache/conformance}"
if command -v npm >/dev/null 2>&1 && [ -f scripts/conformance.txt ]; then
  if [ ! -f "$conf_dir/.installed" ] || ! cmp -s scripts/conformance.txt "$conf_dir/.installed"; then
    mkdir -p "$conf_dir"
    echo "installing the MCP conformance suite into $conf_dir"
    if (cd "$conf_dir" && npm install --silent --no-audit --no-fund --prefix . $(grep -v '^#' "$OLDPWD/scripts/conformance.txt") >/dev/null); then
      cp scripts/conformance.txt "$conf_dir/.installed"
    else
      echo "warning: the MCP conformance suite could not be installed; its tests will say so" >&2
    fi
  fi
  export KEEL_CONFORMANCE_DIR="$conf_dir"
fi

# gopls, pinned, built once into a cache the LSP tests find via KEEL_GOPLS (about 3 minutes
# the first time).
gopls_version=v0.23.0
gopls_dir="${KEEL_GOPLS_CACHE:-$PWD/.cache/gopls-$gopls_version}"
if [ ! -x "$gopls_dir/gopls" ]; then
  echo "installing gopls $gopls_version into $gopls_dir"
  GOBIN="$gopls_dir" go install "golang.org/x/tools/gopls@$gopls_version" \
    || echo "warning: gopls could not be installed; the LSP tests against it will say so" >&2
fi
[ -x "$gopls_dir/gopls" ] && export KEEL_GOPLS="$gopls_dir/gopls"

go vet ./...
go tool staticcheck ./...
go test -race -count=1 "$@" ./...
