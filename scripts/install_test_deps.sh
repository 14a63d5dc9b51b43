#!/usr/bin/env bash
# Installs everything the full test suite needs, so that no test skips:
#   - the reference programs the oracle tests compare against, from Debian/Ubuntu:
#     C++ Leela Zero 0.17 (/usr/games/leelaz), GNU Go 3.8, and PoCL (an OpenCL device on the CPU);
#   - the package with its `test` extra, PyTorch's CPU build (the trainer and the torch backend),
#     Ray and matplotlib (the Zero loop), numba (the compiled expansion);
#   - Sabaki's GTP library for the client test (npm install in tests/clients), when npm exists.
#
# Usage, from the checkout:
#   PIP=.venv/bin/pip bash scripts/install_test_deps.sh    # into a virtual environment
#   bash scripts/install_test_deps.sh                      # python3 -m pip (CI, as root)
# As root it runs apt-get itself; as another user it asks sudo for the apt-get steps only.
# The versions pinned here are the ones CI runs; this is the one place they are written.
set -euo pipefail
cd "$(dirname "$0")/.."

RAY=ray==2.60.0
MATPLOTLIB=matplotlib==3.11.2
NUMBA=numba==0.68.1
# PyTorch: the CPU build from PyTorch's own index (PyPI's Linux wheel is the CUDA build, gigabytes);
# where that index cannot be reached, this version from the default index (on CI's machines, a
# local CPU wheel).
TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
TORCH_FALLBACK=torch==2.13.0

read -r -a pip <<<"${PIP:-python3 -m pip}"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1
if [ "$(id -u)" = 0 ]; then sudo=(); else sudo=(sudo); fi

echo "== installing the reference programs (C++ Leela Zero 0.17, GNU Go 3.8, PoCL)"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq leela-zero gnugo pocl-opencl-icd >/dev/null

echo "== installing leelaz with its test extra (${pip[*]})"
"${pip[@]}" install -q -e '.[test]'

echo "== installing PyTorch's CPU build for the trainer and torch backend tests"
if ! "${pip[@]}" install -q --retries 1 --timeout 30 torch --index-url "$TORCH_CPU_INDEX"; then
  echo "   $TORCH_CPU_INDEX did not answer; $TORCH_FALLBACK from the default index"
  "${pip[@]}" install -q "$TORCH_FALLBACK"
fi

echo "== installing Ray and matplotlib for the Zero loop's tests, numba for the compiled expansion"
"${pip[@]}" install -q "$RAY" "$MATPLOTLIB" "$NUMBA"

if command -v npm >/dev/null; then
  echo "== installing Sabaki's GTP library for the client test"
  (cd tests/clients && npm install --no-audit --no-fund --silent) ||
    { echo "ERROR: npm install in tests/clients failed" >&2; exit 1; }
else
  echo "== npm not found: the client test will skip (apt-get install nodejs npm, then rerun this)"
fi
echo "== done: the test suite (python -m pytest) now runs every test"
