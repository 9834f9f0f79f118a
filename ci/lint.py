"""`make lint`: lint hdl/ and the DUT of every registered testbench (both tools)."""

from __future__ import annotations

import sys
from pathlib import Path

from lockstep.gen.lint import lint_file
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import generate_rtl, rtl_dir


def main() -> int:
    repo = Path(__file__).resolve().parent.parent
    files = sorted((repo / "hdl").rglob("*.v"))
    for tb in TESTBENCHES.values():
        rtl = rtl_dir(tb)
        generate_rtl(tb, rtl)
        if rtl / f"{tb.toplevel}.v" not in files:  # testbenches of one module + params share it
            files.append(rtl / f"{tb.toplevel}.v")
    bad = 0
    for f in files:
        problems = lint_file(f)
        print(f"lint: {'ok  ' if not problems else 'FAIL'} {f.relative_to(repo)}")
        for p in problems:
            print(f"      {p}")
        bad += bool(problems)
    print(f"lint: {len(files) - bad} clean, {bad} with problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
