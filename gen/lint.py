"""Lint generated Verilog: ``verilator --lint-only -Wall`` and ``iverilog -g2012`` (less
its ``nodangle`` clean-up step, which reports nothing: see :func:`_iverilog_base`).

No warning is waived on the command line. Where a generated signal ignores bits on
purpose, its name contains ``unused`` (Verilator's default ``--unused-regexp``), and the
generator's code says why next to it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["lint_file", "LintError"]


class LintError(RuntimeError):
    """A tool needed for linting is missing."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise LintError(f"{name} not found on PATH (run through ci/env.sh or `make`)")
    return path


@functools.cache
def _iverilog_base() -> str | None:
    """A copy of iverilog's base folder (``-B``) whose ``vvp.conf`` leaves out the
    ``nodangle`` functor, or None to run iverilog as it is.

    The lint's iverilog run is the stock one (``-g2012``, vvp target: parse, elaborate,
    the ``cprop`` functor, code generation) less one step. ``nodangle`` only deletes nets
    nothing is connected to ("not necessarily required for proper functioning of
    anything", its source says) and reports nothing, but it takes time quadratic in their
    number: Icarus 11 spent about 4 minutes of a 5-minute run on the largest sparse
    cluster's 60,000 unconnected nets (11 s without it). Every other file of the stock
    folder is a symbolic link. ``LOCKSTEP_IVERILOG_STOCK=1`` runs the stock folder.
    """
    if os.environ.get("LOCKSTEP_IVERILOG_STOCK") == "1":
        return None
    try:
        with tempfile.TemporaryDirectory(prefix="lockstep-ivl-probe-") as tmp:
            empty = Path(tmp) / "empty.v"
            empty.write_text("")
            probe = subprocess.run([_tool("iverilog"), "-v", "-t", "null", "-o", os.devnull, str(empty)],
                                   capture_output=True, text=True, timeout=60)
        m = re.search(r'-C"?([^"\s]+)/null\.conf', probe.stdout + probe.stderr)
        if not m:
            return None
        stock = Path(m.group(1))
        conf = (stock / "vvp.conf").read_text()
        lines = conf.splitlines(keepends=True)
        if "functor:nodangle" not in (ln.strip() for ln in lines):
            return None
        key = hashlib.sha256(f"{stock}\n{conf}".encode()).hexdigest()[:12]
        base = Path(tempfile.gettempdir()) / f"lockstep-ivl-{os.getuid()}-{key}"
        if not (base / "vvp.conf").is_file():
            tmp_base = Path(tempfile.mkdtemp(prefix=f"{base.name}.", dir=base.parent))
            tmp_base.chmod(0o755)
            for entry in stock.iterdir():
                if entry.name != "vvp.conf":
                    (tmp_base / entry.name).symlink_to(entry)
            (tmp_base / "vvp.conf").write_text("".join(ln for ln in lines if ln.strip() != "functor:nodangle"))
            try:
                tmp_base.rename(base)  # atomic: parallel linters never see half a folder
            except OSError:
                shutil.rmtree(tmp_base, ignore_errors=True)  # another process made it first
        return str(base)
    except (OSError, subprocess.SubprocessError):
        return None


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
        [_tool("iverilog"), *(["-B", base] if (base := _iverilog_base()) else []), "-g2012", "-o", "/dev/null",
         "-s", top, str(path), *map(str, extra)],
        capture_output=True,
        text=True,
    )
    if i.returncode != 0 or i.stderr.strip():
        problems += [f"iverilog: {ln}" for ln in (i.stderr or i.stdout).splitlines()]
    return problems
