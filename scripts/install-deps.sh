#!/usr/bin/env bash
# Installs the Debian packages phaseprof needs, only those missing; idempotent.
# Usage: scripts/install-deps.sh [--browser] [--bench]
#   --browser  Chromium + playwright-core for the report's browser test
#   --bench    the peers the benchmarks compare against (PyTorch, heaptrack, ltrace, hyperfine;
#              and, from PyPI, py-spy, Scalene, memray, pyinstrument and viztracer in two
#              bench-only virtual environments: $PHASEPROF_BENCH_VENV (default
#              /opt/phaseprof-venv/bench) sees the torch-2 venv's packages (torch 2.13),
#              $PHASEPROF_BENCH_VENV-torch1 Debian's (torch 1.13). Never used by the
#              product or the tests)
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
  # Lightning's unified package (`import lightning.pytorch`), the name its
  # documentation now uses: the same Trainer under another module name.
  if ! "$venv/bin/python" -c 'import lightning.pytorch' >/dev/null 2>&1; then
    echo "install-deps: lightning 2.6.6 (lightning.pytorch) into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check torch==2.13.0 lightning==2.6.6
  fi
fi
if [ $want_bench = 1 ]; then
  # The Python profilers bench/python_torch compares against, from PyPI. A
  # venv over the torch-2 venv's site packages (a .pth file: --system-site-packages
  # would give the base interpreter's, not the venv's) and one over Debian's
  # python3 with its site packages (torch 1.13). A peer that fails to install is
  # reported and skipped: the benchmark lists it as not installed.
  peers=(py-spy scalene memray pyinstrument viztracer)
  bvenv=${PHASEPROF_BENCH_VENV:-/opt/phaseprof-venv/bench}
  t2=${PHASEPROF_TORCH2_VENV:-/opt/phaseprof-venv/torch2}
  mk_bench_venv() { # DIR BASE-PYTHON [SITE-TO-SEE]
    local dir=$1 base=$2 see=${3:-}
    if [ ! -x "$dir/bin/python" ]; then
      if [ -n "$see" ]; then "$base" -m venv "$dir"; else "$base" -m venv --system-site-packages "$dir"; fi
    fi
    if [ -n "$see" ]; then
      local sp
      sp=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
      echo "$see" > "$sp/phaseprof-torch2.pth"
    fi
    for p in "${peers[@]}"; do
      if [ "$p" = py-spy ]; then
        [ -x "$dir/bin/py-spy" ] && continue
      else
        "$dir/bin/python" -c "import $p" >/dev/null 2>&1 && continue
      fi
      "$dir/bin/python" -m pip install -q --disable-pip-version-check "$p" ||
        echo "install-deps: $p could not be installed into $dir (bench/python_torch lists it as not installed)" >&2
    done
  }
  if [ -x "$t2/bin/python" ]; then
    mk_bench_venv "$bvenv" "$t2/bin/python" \
      "$("$t2/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  else
    echo "install-deps: no torch-2 venv at $t2 (--torch2): bench peers for torch 2 skipped" >&2
  fi
  if /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    mk_bench_venv "$bvenv-torch1" /usr/bin/python3
  else
    echo "install-deps: /usr/bin/python3 has no venv module (python3-venv): bench peers for torch 1.13 skipped" >&2
  fi
fi
exit 0
