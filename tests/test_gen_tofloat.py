"""BFP -> float32 converter: checks specific to this unit.

Determinism, refusals, flag order, record-versus-Verilog and lint are checked for every
unit by tests/test_gen.py.
"""

import json

import numpy as np
import pytest

from lockstep.gen.bfp.tofloat import TO_FLOAT_FLAGS, TO_FLOAT_LATENCY, emit_to_float, to_float_ports
from lockstep.models import bfp
from lockstep.models.bfp.params import BfpFormat
from lockstep.verif.bfp.tofloat_env import lone_outcomes, reachable, result_classes, tf_blocks, tf_lone


def test_record_describes_the_module(tmp_path):
    """The JSON record carries the parameters, the port widths and the latency."""
    fmt = BfpFormat(w=6, e=9, n=3)
    em = emit_to_float(fmt, tmp_path)
    rec = json.loads(em.sidecar.read_text())
    assert BfpFormat.from_dict(rec["params"]) == fmt
    assert rec["ports"] == to_float_ports(fmt)
    assert rec["ports"]["in_data"]["width"] == 6 * 3
    assert rec["ports"]["in_exp"]["width"] == 9
    assert rec["ports"]["out_data"]["width"] == 32 * 3
    assert rec["ports"]["out_flags"]["width"] == len(TO_FLOAT_FLAGS)
    assert rec["timing"]["latency"] == TO_FLOAT_LATENCY == 1
    text = em.verilog.read_text()
    assert "input [17:0] in_data;" in text and "output [95:0] out_data;" in text
    assert em.verilog.name == "bfp_to_float.v"


@pytest.mark.parametrize("fmt", [BfpFormat(w=4, e=8, n=1), BfpFormat(w=8, e=8, n=1), BfpFormat(w=6, e=9, n=1)])
def test_reachability_table_is_exact(fmt):
    """The coverage bins the testbench leaves out are exactly those the model never
    produces (exhaustive over every mantissa and exponent of small formats)."""
    m = np.arange(-(1 << (fmt.w - 1)), 1 << (fmt.w - 1), dtype=np.int64)
    x = np.arange(fmt.e_min, fmt.e_max + 1, dtype=np.int64)
    bits, ff = bfp.to_float32(np.broadcast_to(m, (x.size, m.size)), x)
    cls = result_classes(bits)
    reach = reachable(fmt)
    assert reach["ovf"] == bool((ff & bfp.FFLAG_OVF).any()) == bool((cls == 3).any())
    assert reach["subnormal"] == bool((cls == 1).any())
    rounded = (ff & bfp.FFLAG_INEXACT).astype(bool) & ~(ff & bfp.FFLAG_OVF).astype(bool)
    assert reach["rounding"] == bool(rounded.any()) == bool((ff & bfp.FFLAG_UNF).any())


def test_stimulus_in_range_and_hits_edges():
    """Stimulus mantissas/exponents fit the format; the wide format reaches every class."""
    fmt = BfpFormat(w=24, e=10, n=2)
    m, x, _ = tf_blocks(np.random.default_rng(0), fmt, 400)
    assert m.min() >= -(1 << 23) and m.max() <= (1 << 23) - 1
    assert x.min() >= fmt.e_min and x.max() <= fmt.e_max
    bits, ff = bfp.to_float32(m, x)
    assert set(result_classes(bits).ravel().tolist()) == {0, 1, 2, 3}
    assert all((ff & v).any() for v in bfp.FFLAG_NAMES.values())


@pytest.mark.parametrize("fmt", [BfpFormat(w=4, e=8, n=32), BfpFormat(w=24, e=10, n=2), BfpFormat(w=16, e=9, n=16),
                                 BfpFormat(w=3, e=2, n=1), BfpFormat(w=8, e=8, n=4)])
def test_a_lone_block_raises_the_flags_of_its_one_lane(fmt):
    """tf_lone: one nonzero lane, the named outcome there (ovf: +-Inf with ovf and inexact;
    round: a dropped bit, unf and inexact), so a lane's flag stuck at 0 shows alone (lane
    24's inexact stuck at 0 survived every w4e8n32 run while lanes overflowed together)."""
    outs = lone_outcomes(fmt)
    assert outs == [o for o, k in (("ovf", "ovf"), ("round", "rounding")) if reachable(fmt)[k]]
    rng = np.random.default_rng(1)
    c = 40 * fmt.n
    lane, outcome = rng.integers(0, fmt.n, c), rng.integers(0, max(len(outs), 1), c)
    m, x = tf_lone(rng, fmt, lane, outcome)
    assert ((m != 0).sum(axis=1) == 1).all() and (m[np.arange(c), lane] != 0).all()
    assert (x >= fmt.e_min).all() and (x <= fmt.e_max).all()
    assert (m >= -(1 << (fmt.w - 1))).all() and (m < (1 << (fmt.w - 1))).all()
    _, ff = bfp.to_float32(m, x)
    assert (ff[np.arange(c), lane] == np.bitwise_or.reduce(ff, axis=1)).all()
    want = {"ovf": bfp.FFLAG_OVF | bfp.FFLAG_INEXACT, "round": bfp.FFLAG_UNF | bfp.FFLAG_INEXACT}
    for k, o in enumerate(outs):
        assert (ff[outcome == k, :].max(axis=1) & want[o] == want[o]).all(), o
    if not outs:
        assert (ff == 0).all()
