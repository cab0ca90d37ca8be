#!/usr/bin/env bash
# Installs the Debian packages phaseprof needs, only those missing; idempotent.
# Usage: scripts/install-deps.sh [--browser] [--bench]
#   --browser  Chromium + playwright-core for the report's browser test
#   --bench    the peers the benchmarks compare against (PyTorch, heaptrack, ltrace, hyperfine)
#   --torch2   a virtual environment with PyTorch 2.13 (CPU) and Lightning 2.6 for
#              the torch-2 tests, at $PHASEPROF_TORCH2_VENV (default
#              /opt/phaseprof-venv/torch2); Debian's python3-torch 1.13 stays
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libsqlite3-dev sqlite3 libopenblas-dev liblapacke-dev
      libunwind-dev libgraphviz-dev graphviz libcmocka-dev
      python3-numpy zlib1g-dev)
# distributed jobs (tests/mpi): Open MPI for the PMPI layer and real mpirun
# jobs, PyTorch for the 2-rank gloo DDP test
pkgs+=(openmpi-bin libopenmpi-dev python3-torch)
want_browser=0
want_bench=0
want_torch2=0
for a in "$@"; do
  case "$a" in
    --browser) want_browser=1 ;;
    --bench) want_bench=1 ;;
    --torch2) want_torch2=1 ;;
    *) echo "install-deps: unknown option '$a' (use --browser, --bench, --torch2)" >&2; exit 2 ;;
  esac
done
[ $want_bench = 1 ] && pkgs+=(python3-torch libopenblas0-pthread heaptrack ltrace hyperfine)
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
if [ $want_torch2 = 1 ]; then
  venv=${PHASEPROF_TORCH2_VENV:-/opt/phaseprof-venv/torch2}
  if ! "$venv/bin/python" -c 'import torch, pytorch_lightning' >/dev/null 2>&1; then
    # A CPython 3.11 with venv: the torch 2.13 CPU wheel is built for 3.11.
    py=
    for c in python3.11 python3 /usr/bin/python3; do
      if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
        py=$(command -v "$c"); break
      fi
    done
    if [ -z "$py" ]; then
      SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
      py=/usr/bin/python3
    fi
    echo "install-deps: PyTorch 2.13 and Lightning 2.6 into $venv (with $py)"
    "$py" -m venv --clear "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check torch==2.13.0 pytorch-lightning==2.6.6
  fi
fi
exit 0
