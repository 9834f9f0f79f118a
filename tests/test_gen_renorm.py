"""BFP renormaliser and statistics unit: checks specific to these units (the rest:
tests/test_gen.py), and the testbench's stimulus staying inside the model's domain."""

import json

import numpy as np
import pytest

from lockstep.gen.bfp.renorm import (
    RENORM_LATENCY,
    STATS_WINDOW_STALL,
    emit_renorm,
    emit_stats,
    renorm_ports,
    stats_ports,
)
from lockstep.models import bfp
from lockstep.models.bfp.params import BfpFormat
from lockstep.models.record import ParamError
from lockstep.verif.bfp.renorm_env import RENORM_KINDS, _stats_stream, acc_vectors, lop_bins, min_lop_ok, sticky_ties
from lockstep.verif.registry import TESTBENCHES

#: The registered renormaliser formats (never restated here) and a degenerate corner.
FORMATS = [tb.params for tb in TESTBENCHES.values() if tb.toplevel == "bfp_renorm" and not tb.expect_fail]
FORMATS += [BfpFormat(w=3, e=2, n=1)]


def test_record_describes_the_module(tmp_path):
    """The JSON record carries the parameters, the port widths and the latency."""
    fmt = BfpFormat(w=8, e=5, n=4, rounding="rne")  # acc_bits = 18, e_sum_bits = 6
    em = emit_renorm(fmt, tmp_path)
    rec = json.loads(em.sidecar.read_text())
    assert BfpFormat.from_dict(rec["params"]) == fmt
    assert rec["ports"] == renorm_ports(fmt)
    assert rec["ports"]["in_data"]["width"] == 18 * 4
    assert rec["ports"]["in_e3"]["width"] == 6
    assert rec["ports"]["in_e4"]["width"] == 5
    assert rec["ports"]["out_data"]["width"] == 8 * 4
    assert rec["ports"]["out_flags"]["width"] == len(bfp.FLAG_NAMES)
    assert rec["timing"]["latency"] == RENORM_LATENCY == 1
    text = em.verilog.read_text()
    assert "input [71:0] in_data;" in text and "output [31:0] out_data;" in text


def test_corner_config_lints_clean(tmp_path, lint):
    """One lane, the narrowest widths: lints clean (registered sets: tests/test_gen.py)."""
    assert lint(emit_renorm(BfpFormat(w=3, e=2, n=1), tmp_path).verilog) == []


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f"w{f.w}e{f.e}n{f.n}a{f.acc_bits}")
def test_stimulus_in_model_domain(fmt, seed):
    """Every stimulus kind yields accumulators the model accepts, incl. the extremes."""
    rng = np.random.default_rng(seed)
    acc, kinds = acc_vectors(rng, fmt, 2000)
    assert acc.shape == (2000, fmt.n)
    assert set(np.unique(kinds)) == set(range(len(RENORM_KINDS)))
    lo, hi = -(1 << (fmt.acc_bits - 1)), (1 << (fmt.acc_bits - 1)) - 1
    assert int(acc.min()) >= lo and int(acc.max()) <= hi
    assert (acc == lo).any()
    e4, m, fl = bfp.renormalize(acc, 0, fmt)
    assert m.shape == acc.shape and (fl & bfp.FLAG_ZERO).any()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f"w{f.w}e{f.e}n{f.n}a{f.acc_bits}")
def test_sticky_sweep_puts_every_sticky_place_alone(fmt, seed):
    """sticky_ties: in range (e3, e4 = e3 + r, magnitudes below 2**(A-1)); every lane's
    round bit set and one bit below it; over acc_bits - 2 steps (split over calls) every
    lane has the one sticky bit at every place the shift allows, d = 1 .. r_hi - 1."""
    rng = np.random.default_rng(seed)
    steps = max(1, min(fmt.acc_bits - 1, fmt.e_max + (1 << fmt.e)) - 1)
    parts = [sticky_ties(rng, fmt, 3, 5), sticky_ties(rng, fmt, 8, steps)]
    acc, e3, e4 = (np.concatenate(c) for c in zip(*parts))
    assert (e3 >= -(1 << fmt.e)).all() and (e3 < (1 << fmt.e)).all()
    assert (e4 >= fmt.e_min).all() and (e4 <= fmt.e_max).all()
    r = (e4 - e3)[:, None]
    assert (r >= 2).all()
    mag = np.abs(acc)
    assert (mag < (1 << (fmt.acc_bits - 1))).all()
    assert ((mag >> (r - 1)) & 1 == 1).all()                  # the round bit
    below = mag & ((np.int64(1) << (r - 1)) - 1)
    assert (below != 0).all() and (below & (below - 1) == 0).all()   # one sticky bit
    d = (r - 1) - np.log2(below).astype(np.int64)
    for lane in range(fmt.n):
        assert set(d[-steps:, lane].tolist()) == set(range(1, steps + 1))


# ---- statistics mode ---------------------------------------------------------------------
def test_stats_record_and_corner_lint(tmp_path, lint):
    """One lane, a one-value window, 64-bit accumulator: record and lint."""
    fmt = BfpFormat(w=16, e=5, n=1, stat_log2_win=0, acc=64)
    em = emit_stats(fmt, tmp_path)
    assert lint(em.verilog) == []
    rec = json.loads(em.sidecar.read_text())
    assert rec["ports"] == stats_ports(fmt) and "in_fixed" not in rec["ports"]
    assert rec["timing"]["latency"] == 1 and rec["timing"]["window_stall"] == STATS_WINDOW_STALL


@pytest.mark.parametrize(
    "kwargs,field",
    [({"n": 6, "stat_log2_win": 4}, "n"), ({"n": 16, "stat_log2_win": 3}, "stat_log2_win")],
)
def test_stats_refuses_bad_window(kwargs, field, tmp_path):
    """n must be a power of two that divides the window (the model's refusal)."""
    with pytest.raises(ParamError, match=rf"BfpFormat\.{field}="):
        emit_stats(BfpFormat(**kwargs), tmp_path)


STATS_TBS = ["bfp_stats_patent", "bfp_stats_w8n4_rne", "bfp_stats_w12e6n4_wrap_sat", "bfp_stats_w16n16_reshift",
             "bfp_stats_w4e8n8_reshift"]


@pytest.mark.parametrize("name", STATS_TBS)
def test_stats_stimulus_sweeps_every_leading_one_position(name):
    """The statistics selector's stimulus, drawn chunk by chunk as both modes draw it:
    it opens with one max-mode vector per leading-one position, each with an unclamped
    exponent (e3 changing every vector, so no window of more than one vector completes
    meanwhile), then four at max mode's clamp edges (e_max, e_max + 1, e_min, e_min - 1,
    which before the first window only max mode shows), then each lane alone overflowing
    at e_max's clamp; under the saturating policy its flat windows then set every position of
    mu + k*sigma, each shown unclamped by the vector after (the model's own trace says
    so, independently of the cover point's sampler). Under reshift a window never
    completes above the offset in force, so the offset cannot climb to every position."""
    fmt = TESTBENCHES[name].params
    bins = lop_bins(fmt)
    assert bins and bins == list(range(bins[0], bins[-1] + 1))
    rng, state, parts = np.random.default_rng(3), {}, []
    for _ in range(20):
        parts.append(_stats_stream(rng, fmt, 1024, state))
    acc = np.concatenate([p[0] for p in parts])
    e3 = np.concatenate([p[1] for p in parts])
    kinds = sum((p[2] for p in parts), [])
    s = bfp.StatsSelector(fmt)
    e4, _, fl, tr = s.run_traced(acc, e3)
    clamp = bfp.FLAG_EXP_HI | bfp.FLAG_EXP_LO
    k = len(bins) + 1
    assert kinds[:k] == ["sweep"] * k and kinds[k:k + 4] == ["sweep_clamp"] * 4
    # then the most negative value in each lane in turn (where its leading one, bit
    # acc_bits - 1, shows unclamped: in max mode, the largest magnitude's exponent)
    mins = [i for i, x in enumerate(kinds) if x == "sweep_min"]
    assert mins == list(range(k + 4, k + 4 + (fmt.n if min_lop_ok(fmt) else 0)))
    lo = -(1 << (fmt.acc_bits - 1))
    assert [int(np.flatnonzero(acc[i] == lo)[0]) for i in mins] == list(range(len(mins)))
    assert (bfp.lop_int(np.abs(acc[mins]).max(axis=1)) == fmt.acc_bits - 1).all()
    if mins and (1 << fmt.stat_log2_win) > fmt.n:
        assert tr["max_mode"][mins].all() and not (fl[mins] & clamp).any()
    # then each lane alone, clamped at e_max so that it overflows, shifted left and right
    first = k + 4 + len(mins)
    lanes = [i for i, x in enumerate(kinds) if x == "sweep_lane"]
    assert lanes == list(range(first, first + len(lanes))) and fmt.n <= len(lanes) <= 2 * fmt.n
    assert not any(x.startswith("sweep") for x in kinds[first + len(lanes):])
    alone = acc[lanes] != 0
    assert (alone.sum(axis=1) == 1).all() and set(np.argmax(alone, axis=1).tolist()) == set(range(fmt.n))
    assert (e4[lanes] == fmt.e_max).all() and ((fl[lanes] & bfp.FLAG_OVF) != 0).all()
    mx = np.abs(acc[:k]).max(axis=1)
    assert sorted(bfp.lop_int(mx[mx > 0]).tolist()) == bins and (mx == 0).sum() == 1
    if (1 << fmt.stat_log2_win) > fmt.n:
        assert tr["max_mode"][:k + 4].all() and not (fl[:k] & clamp).any()
        # max mode's clamps: at e_max, one past it, at e_min, one past it
        assert e4[k:k + 4].tolist() == [fmt.e_max, fmt.e_max, fmt.e_min, fmt.e_min]
        assert (fl[k:k + 4] & clamp).tolist() == [0, bfp.FLAG_EXP_HI, 0, bfp.FLAG_EXP_LO]
    if fmt.stat_policy != "sat":
        return
    ends = np.flatnonzero(tr["window_end"][:-1])
    shown = ends[(e3[ends + 1] == e3[ends]) & ~tr["max_mode"][ends + 1] & ((fl[ends + 1] & clamp) == 0)]
    flat = [t for t in shown if kinds[t] == "flat"]
    assert set(tr["window_lop"][flat].tolist()) >= set(bins)


@pytest.mark.parametrize("name", STATS_TBS)
def test_stats_lane_edges_sit_on_the_largest_mantissa(name):
    """Kind lane_edge: one non-zero lane, shifted by the exponent in force (max mode's, or
    the offset's, no guard) to exactly 2**(w-1) - 1, or with half an ulp more, which RNE
    rounds to an overflow of that lane alone; the run opens with both in every lane
    where the offset allows (a lane's ovf stuck at 0, or its bound written > 2**(w-1) - 2,
    survived every stats run). The model's own trace says so, chunk after chunk."""
    fmt = TESTBENCHES[name].params
    rng, state, parts = np.random.default_rng(5), {}, []
    for _ in range(4):
        parts.append(_stats_stream(rng, fmt, 1024, state))
    acc = np.concatenate([p[0] for p in parts])
    e3 = np.concatenate([p[1] for p in parts])
    kinds = np.array(sum((p[2] for p in parts), []))
    _, man, fl, tr = bfp.StatsSelector(fmt).run_traced(acc, e3)
    rows = np.flatnonzero(kinds == "lane_edge")
    if name != "bfp_stats_w4e8n8_reshift":   # there k = 0 and reshift keep the offset below any edge
        assert {int(np.flatnonzero(acc[r])[0]) for r in rows[:2 * fmt.n]} == set(range(fmt.n))
    top = (1 << (fmt.w - 1)) - 1
    for r in rows:
        lane = np.flatnonzero(acc[r])
        assert len(lane) == 1 and not tr["guard"][r]
        m = abs(int(man[r, lane[0]]))
        assert m == top or (fl[r] & bfp.FLAG_OVF and fmt.rounding == "rne"), (r, m, fl[r])
    assert len(rows) >= (0 if name == "bfp_stats_w4e8n8_reshift" else 2 * fmt.n)


@pytest.mark.parametrize("fmt", [BfpFormat(w=16, e=5, n=16, overflow="wrap"), BfpFormat(w=4, e=8, n=8, rounding="rne"),
                                 BfpFormat(w=16, e=6, n=8, acc=64, rounding="rne", overflow="wrap")])
def test_the_edge_kind_puts_every_lane_alone_on_the_overflow_edge(fmt):
    """Kind ``edge``: fixed mode one exponent below max mode's, so a block maximum 2**k
    overflows by exactly one and 2**k - 2**(k-w+1) is the largest mantissa, in each lane in
    turn (a lane's ``ip > 2**(w-1) - 1`` written ``> 2**(w-1)`` survived every run while
    the maxima stood in lane 0)."""
    from lockstep.verif.bfp.renorm_env import _exponents, _kind

    rng = np.random.default_rng(3)
    count = 4 * fmt.n
    acc = _kind(rng, "edge", count, fmt)
    e3, fixed, e4 = _exponents(rng, fmt, acc, 0.0, np.ones(count, bool))
    assert fixed.all()
    mags = np.abs(acc)
    lane = mags.argmax(axis=1)
    assert sorted(np.bincount(lane, minlength=fmt.n).tolist()) == [4] * fmt.n   # every lane, in turn
    top = mags.max(axis=1)
    pow2 = (top & (top - 1)) == 0
    _, _, flags = bfp.renormalize(acc, e3, fmt, "fixed", e4)
    ovf = (flags & bfp.FLAG_NAMES["ovf"]) != 0
    assert pow2.any() and (~pow2).any()
    assert (ovf == pow2).all()   # on the edge: 2**k overflows, 2**k - 2**(k-w+1) fits
