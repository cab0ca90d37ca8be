#!/usr/bin/env bash
# Installs the Debian packages phaseprof needs, only those missing; idempotent.
# Usage: scripts/install-deps.sh [--browser]   (--browser adds Chromium + playwright-core for the report test)
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libsqlite3-dev sqlite3 libopenblas-dev liblapacke-dev
      libunwind-dev libgraphviz-dev graphviz libcmocka-dev
      python3-numpy zlib1g-dev)
want_browser=0
for a in "$@"; do [ "$a" = --browser ] && want_browser=1; done
if [ $want_browser = 1 ]; then
  pkgs+=(chromium)
  # node/npm may come from another package (nodesource's nodejs ships npm);
  # Debian's npm conflicts with that, so only install them when absent.
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # libunwind-dev replaces LLVM's libunwind-14-dev on the stock image; that is intended.
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ $want_browser = 1 ]; then
  here=$(cd "$(dirname "$0")/.." && pwd)
  if [ ! -d "$here/tests/browser/node_modules/playwright-core" ]; then
    (cd "$here/tests/browser" && npm install --no-audit --no-fund --silent >/dev/null)
  fi
fi
exit 0
