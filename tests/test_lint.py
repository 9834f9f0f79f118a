"""gen/lint.py: both tools report a broken file, and the iverilog run it makes (the stock
one less the ``nodangle`` clean-up functor) gives stock iverilog's verdict."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lockstep.gen import lint
from lockstep.gen.bfp import emit_quantizer
from lockstep.models.bfp.params import BfpFormat

BROKEN = {
    "undeclared": "module undeclared(input a, output y);\n  assign y = b;\nendmodule\n",
    "syntax": "module syntax(input a, output y)\n  assign y = a;\nendmodule\n",
    "no_port": "module no_port(input a, output y);\n  sub u(.q(a));\n  assign y = a;\nendmodule\n"
               "module sub(input p);\nendmodule\n",
}


def _iverilog(path: Path, base: str | None) -> tuple[int, str]:
    r = subprocess.run(["iverilog", *(["-B", base] if base else []), "-g2012", "-o", "/dev/null", "-s", path.stem,
                        str(path)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def test_base_is_stock_less_nodangle():
    base = lint._iverilog_base()
    if base is None:
        pytest.skip("this iverilog has no nodangle functor to leave out")
    stock = Path(base, "ivl").resolve().parent
    want = [ln for ln in (stock / "vvp.conf").read_text().splitlines() if ln.strip() != "functor:nodangle"]
    assert Path(base, "vvp.conf").read_text().splitlines() == want and "flag:DLL=vvp.tgt" in want
    others = sorted(p.name for p in stock.iterdir() if p.name != "vvp.conf")
    assert sorted(p.name for p in Path(base).iterdir() if p.name != "vvp.conf") == others
    assert all(Path(base, name).resolve() == (stock / name).resolve() for name in others)


@pytest.mark.parametrize("name", BROKEN)
def test_broken_files_fail_both_ways(name, tmp_path):
    path = tmp_path / f"{name}.v"
    path.write_text(BROKEN[name])
    problems = lint.lint_file(path)
    assert any(ln.startswith("iverilog:") for ln in problems), problems
    assert any(ln.startswith("verilator:") for ln in problems), problems
    rc, out = _iverilog(path, lint._iverilog_base())
    assert (rc, out) == _iverilog(path, None) and rc != 0


def test_clean_design_same_verdict(tmp_path):
    em = emit_quantizer(BfpFormat(w=8, e=5, n=4), tmp_path)
    assert _iverilog(em.verilog, lint._iverilog_base()) == _iverilog(em.verilog, None) == (0, "")
    assert lint.lint_file(em.verilog) == []
