"""Lint generated Verilog: ``verilator --lint-only -Wall`` and ``iverilog -g2012``.

No warning is waived on the command line. Where a generated signal ignores bits on
purpose, its name contains ``unused`` (Verilator's default ``--unused-regexp``), and the
generator's code says why next to it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

__all__ = ["lint_file", "LintError"]


class LintError(RuntimeError):
    """A tool needed for linting is missing."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise LintError(f"{name} not found on PATH (run through ci/env.sh or `make`)")
    return path


def lint_file(path: Path | str, top: str | None = None, extra: tuple[Path | str, ...] = (),
              timing: bool = False) -> list[str]:
    """Lint one Verilog file with both tools.

    Args:
        path: the ``.v`` file.
        top: top module (default: the file's stem).
        extra: more files the top needs (a harness's DUT).
        timing: the file has delays and waits (a harness's clock): Verilator's ``--timing``.

    Returns:
        Problem lines (empty when clean).
    """
    path = Path(path)
    top = top or path.stem
    problems: list[str] = []
    v = subprocess.run(
        [_tool("verilator"), "--lint-only", "-Wall", *(["--timing"] if timing else []), "--top-module", top,
         str(path), *map(str, extra)],
        capture_output=True,
        text=True,
    )
    if v.returncode != 0 or v.stderr.strip():
        problems += [f"verilator: {ln}" for ln in v.stderr.splitlines() if ln.startswith("%")]
        if not problems:
            problems.append(f"verilator exited {v.returncode}: {v.stderr.strip()[:500]}")
    i = subprocess.run(
        [_tool("iverilog"), "-g2012", "-o", "/dev/null", "-s", top, str(path), *map(str, extra)],
        capture_output=True,
        text=True,
    )
    if i.returncode != 0 or i.stderr.strip():
        problems += [f"iverilog: {ln}" for ln in (i.stderr or i.stdout).splitlines()]
    return problems
