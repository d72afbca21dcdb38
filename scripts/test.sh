#!/usr/bin/env bash
# Runs keel's whole test suite on a fresh machine: installs what the tests use (ripgrep for the
# Grep parity test, tmux for the terminal end-to-end tests, chromium for the dashboard's
# browser test, bash for the differential fuzz of
# the permission engine's shell parser, Jupyter's nbformat to validate notebook edits; from npm
# the MCP reference servers, the MCP conformance suite with the node it needs, the Agent SDK
# and the Agent Client Protocol's library; a pinned gopls), each once into a cache directory,
# then go vet, staticcheck and go test -race.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v rg >/dev/null 2>&1 || need_apt+=(ripgrep)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v bash >/dev/null 2>&1 || need_apt+=(bash)
# Debian's bubblewrap: the sandbox's escape suite runs through it as well as keel's own helper.
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
/usr/bin/python3 -c 'import nbformat' >/dev/null 2>&1 || need_apt+=(python3-nbformat)
# Debian's chromium for the dashboard's browser test (driven headless over the DevTools
# protocol; the test passes the flags that work without network access).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need_apt[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "warning: ${need_apt[*]} missing and cannot be installed here; the tests that need them will say so" >&2
  fi
fi

# npm_cache VAR DIR LIST [npm flags…]: installs the packages pinned in LIST into DIR once (again
# when LIST changes) and exports VAR=DIR for the tests. A failed install warns; the tests that
# need it say so.
npm_cache() {
  local var=$1 dir=$2 list=$3
  shift 3
  command -v npm >/dev/null 2>&1 && [ -f "$list" ] || return 0
  if [ ! -f "$dir/.installed" ] || ! cmp -s "$list" "$dir/.installed"; then
    mkdir -p "$dir"
    echo "installing $(grep -v '^#' "$list" | tr '\n' ' ')into $dir"
    if (cd "$dir" && npm install --silent --no-audit --no-fund "$@" --prefix . $(grep -v '^#' "$OLDPWD/$list") >/dev/null); then
      cp "$list" "$dir/.installed"
    else
      echo "warning: $list could not be installed; the tests that need it will say so" >&2
      return 0
    fi
  fi
  export "$var=$dir"
}

# The MCP reference servers; the MCP conformance suite and the node (>= 22) it needs; the
# Agent SDK (TypeScript) the SDK suite drives keel with, without its optional native Claude
# Code binary.
npm_cache KEEL_NPM_CACHE "${KEEL_NPM_CACHE:-$PWD/.cache/npm}" scripts/npm-servers.txt
npm_cache KEEL_CONFORMANCE_DIR "${KEEL_CONFORMANCE_DIR:-$PWD/.cache/conformance}" scripts/conformance.txt
npm_cache KEEL_AGENT_SDK "${KEEL_AGENT_SDK:-$PWD/.cache/agent-sdk}" scripts/agent-sdk.txt --omit=optional
# The Agent Client Protocol's TypeScript library, whose client side drives `keel acp`.
npm_cache KEEL_ACP_SDK "${KEEL_ACP_SDK:-$PWD/.cache/acp-sdk}" scripts/acp-sdk.txt

# gopls, pinned, built once into a cache the LSP tests find via KEEL_GOPLS (about 3 minutes
# the first time).
gopls_version=v0.23.0
gopls_dir="${KEEL_GOPLS_CACHE:-$PWD/.cache/gopls-$gopls_version}"
if [ ! -x "$gopls_dir/gopls" ]; then
  echo "installing gopls $gopls_version into $gopls_dir"
  GOBIN="$gopls_dir" go install "golang.org/x/tools/gopls@$gopls_version" \
    || echo "warning: gopls could not be installed; the LSP tests against it will say so" >&2
fi
if [ -x "$gopls_dir/gopls" ]; then export KEEL_GOPLS="$gopls_dir/gopls"; fi

# Screenshots and other artefacts tests leave for people to look at.
export KEEL_TEST_OUTPUT="${KEEL_TEST_OUTPUT:-$PWD/.cache/test-output}"

go vet ./...
go tool staticcheck ./...
# cmd/keel alone runs for minutes; on a loaded machine it passes go test's default 10-minute bound.
go test -race -count=1 -timeout 30m "$@" ./...
