"""`make lint`: lint hdl/ and the DUT of every registered testbench (both tools)."""

from __future__ import annotations

import sys
from pathlib import Path

from lockstep.gen.lint import lint_file
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import BUILD, build_key, generate_rtl


def main() -> int:
    repo = Path(__file__).resolve().parent.parent
    files = sorted((repo / "hdl").rglob("*.v"))
    for tb in TESTBENCHES.values():
        rtl = BUILD / tb.name / build_key(tb) / "rtl"
        generate_rtl(tb, rtl)
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
