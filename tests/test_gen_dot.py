"""BFP dot-product generator: checks specific to this unit (the rest: tests/test_gen.py)."""

import json

import numpy as np
import pytest

from lockstep.gen.bfp.dot import DOT_LATENCY, DOT_MAX_N, dot_ports, emit_dot, tree_width
from lockstep.models import bfp
from lockstep.models.bfp.params import BfpFormat
from lockstep.models.record import ParamError
from lockstep.verif.registry import TESTBENCHES

#: The formats the dot testbenches verify, from the registry (never restated here).
DOT_SETS = [tb.params for tb in TESTBENCHES.values() if tb.toplevel == "bfp_dot" and not tb.expect_fail]


def test_record_describes_the_module(tmp_path):
    """Ports, widths and latency in the JSON record follow the format."""
    fmt = BfpFormat(w=6, e=4, n=3, acc=30)
    em = emit_dot(fmt, tmp_path)
    rec = json.loads(em.sidecar.read_text())
    assert BfpFormat.from_dict(rec["params"]) == fmt
    assert rec["ports"] == json.loads(json.dumps(dot_ports(fmt)))
    assert rec["ports"]["in_a"]["width"] == 18 and rec["ports"]["in_b"]["width"] == 18
    assert rec["ports"]["out_acc"]["width"] == 30
    assert rec["ports"]["out_e3"]["width"] == 5
    assert rec["ports"]["out_flags"]["width"] == len(bfp.FLAG_NAMES)
    assert rec["timing"]["latency"] == DOT_LATENCY
    assert "output [29:0] out_acc;" in em.verilog.read_text()


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 16, 33, 1000, 1024])
def test_tree_is_exactly_acc_min_bits(n):
    """The adder tree grows one bit per level: its output is exactly ``acc_min`` bits."""
    for w in (3, 16, 24):
        assert tree_width(n, 2 * w) == BfpFormat(w=w, n=n).acc_min


def test_too_many_lanes_refused(tmp_path):
    """n above DOT_MAX_N is refused, naming the field."""
    with pytest.raises(ParamError, match=r"BfpFormat\.n="):
        emit_dot(BfpFormat(w=4, e=5, n=DOT_MAX_N + 1), tmp_path)


@pytest.mark.parametrize(
    "fmt",
    [BfpFormat(w=3, e=2, n=1), BfpFormat(w=5, e=3, n=3), BfpFormat(w=12, e=6, n=7, acc=40)],
    ids=str,
)
def test_corner_configs_lint_clean(fmt, tmp_path, lint):
    """Degenerate trees (n=1, odd n) lint clean too; registered sets: tests/test_gen.py."""
    em = emit_dot(fmt, tmp_path)
    assert lint(em.verilog) == []


@pytest.mark.parametrize("fmt", DOT_SETS, ids=str)
def test_stimulus_is_legal_and_reaches_the_corners(fmt, seed):
    """The testbench's stimulus is accepted by the model and reaches both OVF sources."""
    pytest.importorskip("cocotb")
    from lockstep.verif.bfp.dot_env import BIAS_KINDS, dot_items

    items = dot_items(np.random.default_rng(seed), fmt, 2000)
    assert {it.bkind for it in items} == set(BIAS_KINDS)
    en = [it for it in items if it.bias_en]
    a = np.array([it.a for it in en])
    b = np.array([it.b for it in en])
    acc, e3, fl = bfp.dot(
        a, [it.ea for it in en], b, [it.eb for it in en], fmt,
        bias=[it.bias for it in en], e5=[it.e5 for it in en],
    )
    assert (fl & bfp.FLAG_OVF).any() and not (fl & bfp.FLAG_OVF).all()
    lim = (1 << (fmt.acc_bits - 1)) - 1
    assert (np.abs(acc) == lim).any()
