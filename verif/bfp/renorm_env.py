"""Testbench knowledge of the BFP renormaliser (accumulators, e3 -> e4, mantissas, flags).

Plugs into :mod:`lockstep.verif.stream_env`: corner-biased accumulator vectors over the
whole ``acc_bits`` range (all zero, one nonzero lane, extremes incl. ``-2**(A-1)``,
``2**k`` / ``2**k - 1`` maxima, RNE ties and round-ups), ``e3`` over the ``e_sum_bits``
range (partly aimed so that e4 lands near the clamp limits), and fixed-mode vectors at
random ``e4`` (extremes included). The check predicts every vector with
:func:`lockstep.models.bfp.renormalize` (one call per mode); cover points span every
reachable flag, the mode, the shift direction and clipping, and RNE round-ups.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import numpy as np

from lockstep.models import bfp
from lockstep.models.bfp.params import BfpFormat
from lockstep.verif.agents.stream import Beat
from lockstep.verif.columns import ints, lanes, signed
from lockstep.verif.coverage import Covergroup
from lockstep.verif.packing import pack_lanes
from lockstep.verif.stream_env import GoldenFlagsQuiet, StreamTest, StreamUnit
from lockstep.verif.bfp.stimulus import any_lane, drawn_items, item_columns, pick_kinds
from lockstep.verif.bfp.bins import EXP_BINS, exp_class

__all__ = ["RENORM_KINDS", "RenormItem", "RenormUnit", "RenormTest", "StatsUnit", "StatsTest", "acc_vectors", "sticky_ties"]

#: Stimulus kinds and their default weights.
RENORM_KINDS: dict[str, float] = {
    "full": 2.0,  # every lane uniform over the whole A-bit range
    "scaled": 4.0,  # lanes uniform below a random power of two (every lop)
    "zero": 1.0,  # all lanes 0
    "single": 1.5,  # one nonzero lane
    "extreme": 1.5,  # lanes from {-2**(A-1), +-(2**(A-1)-1), +-1, 0}
    "pow2": 2.0,  # maximum exactly +-2**k or +-(2**k - 1)
    "ties": 2.0,  # lanes exactly halfway between two mantissas (max-mode e4)
    "roundup": 2.0,  # maximum just below 2**(w-1+r): RNE rounds up to 2**(w-1)
    "edge": 2.0,  # fixed mode, e4 one below max mode's: a maximum 2**k overflows by one, or is the largest mantissa; lanes in turn
}


@dataclass
class RenormItem:
    """One input vector.

    Attributes:
        acc: ``n`` accumulator values (signed, ``acc_bits`` wide).
        e3: their exponent.
        fixed: fixed mode (use ``e4``).
        e4: the fixed exponent (ignored in max mode).
        kind: stimulus kind.
    """

    acc: np.ndarray
    e3: int
    fixed: bool = False
    e4: int = 0
    kind: str = "full"


_FIELDS = ["acc", "e3", "fixed", "e4", "kind"]


def _mags_below(rng: np.random.Generator, bits: np.ndarray) -> np.ndarray:
    """Uniform magnitudes in ``[0, 2**bits)`` (``bits`` int array in [0, 63])."""
    raw = rng.integers(0, np.iinfo(np.uint64).max, size=bits.shape, dtype=np.uint64, endpoint=True)
    sh = (64 - bits).astype(np.uint64)
    out = np.where(bits == 0, np.uint64(0), raw >> np.minimum(sh, np.uint64(63)))
    return out.astype(np.int64)


def _signs(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.choice(np.array([-1, 1], dtype=np.int64), size=shape)


def _kind(rng: np.random.Generator, kind: str, count: int, fmt: BfpFormat) -> np.ndarray:
    n, w, a = fmt.n, fmt.w, fmt.acc_bits
    lo, hi = -(1 << (a - 1)), (1 << (a - 1)) - 1
    shape = (count, n)
    if kind == "full":
        return rng.integers(lo, hi, size=shape, dtype=np.int64, endpoint=True)
    if kind == "scaled":
        b = rng.integers(0, a, size=(count, 1))  # magnitudes < 2**b, b <= a - 1
        return _mags_below(rng, np.broadcast_to(b, shape)) * _signs(rng, shape)
    if kind == "zero":
        return np.zeros(shape, dtype=np.int64)
    if kind == "single":
        out = np.zeros(shape, dtype=np.int64)
        b = rng.integers(1, a, size=count)
        v = np.maximum(_mags_below(rng, b), 1) * _signs(rng, (count,))
        v = np.where(rng.random(count) < 0.1, lo, v)
        out[np.arange(count), rng.integers(0, n, size=count)] = v
        return out
    if kind == "extreme":
        pool = np.array([lo, hi, -hi, 1, -1, 0], dtype=np.int64)
        return rng.choice(pool, size=shape)
    if kind == "pow2":
        k = rng.integers(0, a - 1, size=(count, 1))  # 2**k <= 2**(a-2): +-2**k fits
        top = (np.int64(1) << k.astype(np.int64)) - rng.integers(0, 2, size=(count, 1))
        top = np.maximum(top, 1)
        rest = _mags_below(rng, np.broadcast_to(k, shape))  # below 2**k
        rest[:, :1] = top
        return any_lane(rng, rest * _signs(rng, shape))
    if kind == "edge":
        # a right shift (k >= w - 1) of the maximum, 2**k (one past the largest mantissa at
        # the edge exponent: the first n vectors, one per lane) or 2**k - 2**(k-w+1) (exactly
        # the largest: the next n), to the lane of its turn; the rest below 2**(k-1)
        k = rng.integers(min(w - 1, a - 2), a - 1, size=(count, 1)).astype(np.int64)
        one = np.int64(1)
        inside = ((np.arange(count) // n) % 2).reshape(count, 1)
        top = (one << k) - inside * (one << (k - w + 1))
        rest = _mags_below(rng, np.broadcast_to(k - 1, shape))
        lane = np.resize(rng.permutation(n), count)
        rest[np.arange(count), lane] = top[:, 0]
        return rest * _signs(rng, shape)
    if kind in ("ties", "roundup"):
        # max lane with lop = w - 2 + r so max-mode e4 = e3 + r (right shift r >= 1)
        rmax = max(1, min(a - w, 63 - w))  # top < 2**(w-1+r) <= 2**62 stays in int64
        r = rng.integers(1, rmax + 1, size=(count, 1)).astype(np.int64)
        one = np.int64(1)
        if kind == "ties":
            m = rng.integers(0, 1 << (w - 2), size=shape).astype(np.int64)
            rest = ((2 * m + 1) << (r - 1)) + (rng.random(shape) < 0.2) * (one << (r - 1))
            rest[:, :1] = one << (w - 2 + r)
        else:
            top = (one << (w - 1 + r)) - (one << r) + (one << (r - 1))
            top = top + _mags_below(rng, np.maximum(r - 1, 0))
            rest = _mags_below(rng, np.broadcast_to(w - 2 + r, shape))
            rest[:, :1] = top
        sign = _signs(rng, shape)
        return any_lane(rng, np.clip(rest, 0, hi) * sign)
    raise ValueError(f"unknown stimulus kind {kind!r}; known: {sorted(RENORM_KINDS)}")


def acc_vectors(
    rng: np.random.Generator,
    fmt: BfpFormat,
    count: int,
    weights: dict[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Random accumulator vectors for a renormaliser of format ``fmt``.

    Args:
        rng: the generator (seeded by the test).
        fmt: the format (``n`` lanes of ``acc_bits`` bits).
        count: number of vectors.
        weights: kind -> relative weight (default :data:`RENORM_KINDS`).

    Returns:
        ``(acc (count, n) int64, kinds (count,))`` with kinds indexing ``list(weights)``.
    """
    if count < 0:
        raise ValueError(f"count={count} must be >= 0")
    weights = dict(weights or RENORM_KINDS)
    names = list(weights)
    kinds = pick_kinds(rng, weights, count)
    out = np.zeros((count, fmt.n), dtype=np.int64)
    for i, name in enumerate(names):
        sel = np.flatnonzero(kinds == i)
        if sel.size:
            out[sel] = _kind(rng, name, sel.size, fmt)
    return out, kinds


def _exponents(
    rng: np.random.Generator, fmt: BfpFormat, acc: np.ndarray, fixed_rate: float, edge_rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(e3, fixed, e4)`` per vector.

    Half the ``e3`` values are uniform over the ``e_sum_bits`` range; the other half are
    aimed so that the max-mode e4 lands in ``[e_min - 3, e_max + 3]`` (clamping on both
    sides, and unclamped exponents). Fixed-mode ``e4`` is uniform, an extreme, near ``e3``
    (small shifts in both directions) or one below the max-mode exponent (the maximum on
    the overflow edge); ``edge_rows`` (kind ``edge``) are always that, with ``e3`` drawn so
    that the exponent is not clamped.
    """
    count = acc.shape[0]
    es_lo, es_hi = fmt.e_sum_min, fmt.e_sum_max
    mx = np.abs(acc).astype(np.uint64).max(axis=1) if count else np.zeros(0, np.uint64)
    lop = np.where(mx == 0, 0, bfp.lop_int(np.maximum(mx, np.uint64(1))))
    target = rng.integers(fmt.e_min - 3, fmt.e_max + 4, size=count)
    aimed = np.clip(target - lop + (fmt.w - 2), es_lo, es_hi)
    e3 = np.where(rng.random(count) < 0.5, aimed, rng.integers(es_lo, es_hi + 1, size=count))
    fixed = rng.random(count) < fixed_rate
    pick = rng.integers(0, 5, size=count)
    e4 = rng.integers(fmt.e_min, fmt.e_max + 1, size=count)
    e4 = np.where(pick == 1, fmt.e_min, np.where(pick == 2, fmt.e_max, e4))
    near = np.clip(e3 + rng.integers(-fmt.w - 2, fmt.w + 3, size=count), fmt.e_min, fmt.e_max)
    e4 = np.where(pick == 3, near, e4)
    def below_max(e3: np.ndarray, k: np.ndarray) -> np.ndarray:
        """One below the exponent max mode picks for a maximum of lop ``k``: a maximum
        ``2**k`` becomes exactly ``2**(w-1)``, one past the largest mantissa."""
        return np.clip(e3 + k - (fmt.w - 2) - 1, fmt.e_min, fmt.e_max)

    # the block maximum on or past the overflow edge (exactly on it for 2**k; any other
    # maximum overflows by less than a factor 2), in whichever lane holds it
    e4 = np.where(pick == 4, below_max(e3, lop), e4)
    if edge_rows is not None and edge_rows.any():   # kind "edge": fixed, on the edge, unclamped
        up = lop + ((mx & (mx - np.uint64(1))) != 0)   # ceil(log2 max): the edge 2**k of either maximum
        e3_edge = np.clip(rng.integers(fmt.e_min, fmt.e_max + 1, size=count) - up + (fmt.w - 2) + 1, es_lo, es_hi)
        e3 = np.where(edge_rows, e3_edge, e3)
        fixed = fixed | edge_rows
        e4 = np.where(edge_rows, below_max(e3, up), e4)
    return e3.astype(np.int64), fixed, e4.astype(np.int64)


def sticky_ties(rng: np.random.Generator, fmt: BfpFormat, start: int, count: int) -> tuple[np.ndarray, ...]:
    """``count`` fixed-mode vectors of the sticky sweep from its step ``start``: ``(acc,
    e3, e4)``, with ``e4 = e3 + r``, a right shift ``r`` of 2 .. ``acc_bits - 1`` (max
    mode's stop near ``acc_bits - w``). Every lane holds ``(2m + 1) * 2**(r-1) + 2**j``,
    ``m`` even, so the one bit below the kept ones (the round bit) is set and one sticky
    bit ``d`` places below it, ``j = r - 1 - d``: RNE rounds up for that bit alone.
    ``d`` steps through 1 .. ``acc_bits - 2`` in each lane (the row's ``r`` drawn above
    its lanes' largest ``d``), so every place of the shifter's sticky OR is once the only
    one set, in each lane, within ``acc_bits - 2`` steps (bfp_renorm@619a m098: lane 1's
    sticky place 10 stuck at 0, reached only by a right shift of 11 or more, which max
    mode's ties never make, survived)."""
    a, n = fmt.acc_bits, fmt.n
    es_lo = fmt.e_sum_min
    r_hi = min(a - 1, fmt.e_max - es_lo)   # e3 = e4 - r must stay in the e_sum range
    step = (start + np.arange(count))[:, None] + np.arange(n)[None, :]
    d = (step % max(1, r_hi - 1) + 1).astype(np.int64)
    r = rng.integers(d.max(axis=1) + 1, r_hi + 1)[:, None].astype(np.int64)
    one = np.int64(1)
    m_hi = np.minimum(one << (fmt.w - 2), one << (a - 1 - r))   # (2m + 1) * 2**(r-1) stays below 2**(a-1)
    m = 2 * rng.integers(0, np.maximum(m_hi // 2, 1), size=(count, n))
    mag = ((2 * m + 1) << (r - 1)) + (one << (r - 1 - d))
    e4 = rng.integers(np.maximum(fmt.e_min, es_lo + r[:, 0]), fmt.e_max + 1)
    return mag * _signs(rng, mag.shape), (e4 - r[:, 0]).astype(np.int64), e4.astype(np.int64)


class RenormUnit(GoldenFlagsQuiet, StreamUnit):
    """The renormaliser: ``in_data/in_e3/in_fixed/in_e4`` -> ``out_data/out_e4/out_flags``."""

    params_type = BfpFormat
    in_fields = ["data", "e3", "fixed", "e4"]
    out_fields = ["data", "e4", "flags"]
    covergroup = "bfp.renorm"

    def items(self, rng: np.random.Generator, count: int) -> list[RenormItem]:
        fmt: BfpFormat = self.params
        acc, kinds = acc_vectors(rng, fmt, count)
        e3, fixed, e4 = _exponents(rng, fmt, acc, float(self.ctx.opt("fixed_rate", 0.25)),
                                   kinds == list(RENORM_KINDS).index("edge"))
        kind = np.array(list(RENORM_KINDS) + ["sticky"])[kinds]
        # one vector in eight goes on with the sticky sweep (sticky_ties: fixed mode, every
        # place below the round bit the only sticky bit set, in every lane)
        idx = np.flatnonzero(rng.random(count) < 1 / 8)
        if idx.size:
            acc[idx], e3[idx], e4[idx] = sticky_ties(rng, fmt, self._sticky_at, idx.size)
            fixed[idx], kind[idx] = True, "sticky"
            self._sticky_at += idx.size
        return drawn_items(RenormItem, {"acc": acc, "e3": e3, "fixed": fixed, "e4": e4, "kind": kind}, _FIELDS)

    _sticky_at = 0   # sticky-sweep vectors sent so far (the sweep goes on from there)

    def columns(self, items: list[RenormItem]) -> dict[str, np.ndarray]:
        """The fields of ``items``, column by column (``acc`` as ``(N, n)`` int64)."""
        c = item_columns(items, _FIELDS)
        c["acc"] = c["acc"].astype(np.int64, copy=False).reshape(len(items), self.params.n)
        c["e3"], c["e4"] = c["e3"].astype(np.int64, copy=False), c["e4"].astype(np.int64, copy=False)
        c["fixed"] = c["fixed"].astype(bool, copy=False)
        return c

    def encode(self, item: RenormItem) -> dict[str, int]:
        fmt: BfpFormat = self.params
        return {
            "data": pack_lanes(item.acc, fmt.acc_bits),
            "e3": int(item.e3) & ((1 << fmt.e_sum_bits) - 1),
            "fixed": int(item.fixed),
            "e4": int(item.e4) & ((1 << fmt.e) - 1),
        }

    def encode_columns(self, items: list[RenormItem]) -> dict[str, np.ndarray]:
        fmt: BfpFormat = self.params
        c = self.columns(items)
        # 64-bit lanes: their unsigned readings (uint64), else masked int64
        data = c["acc"].view(np.uint64) if fmt.acc_bits == 64 else c["acc"] & ((1 << fmt.acc_bits) - 1)
        cols = {
            "data": data,
            "e3": c["e3"] & ((1 << fmt.e_sum_bits) - 1),
            "fixed": c["fixed"].astype(np.int64),
            "e4": c["e4"] & ((1 << fmt.e) - 1),
        }
        return {f: cols[f] for f in self.in_fields}

    def golden(
        self, items: list[RenormItem], fmt: BfpFormat | None = None, cols: dict[str, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Model outputs ``(e4, mantissas, flags)`` for ``items`` (one call per mode, each on
        its own vectors)."""
        fmt = fmt or self.params
        c = cols or self.columns(items)
        acc, e3, fixed = c["acc"], c["e3"], c["fixed"]
        n = len(acc)
        g_e4, g_man, g_flg = np.zeros(n, np.int64), np.zeros((n, fmt.n), np.int64), np.zeros(n, np.int64)
        for rows, kw in ((~fixed, {"mode": "max"}), (fixed, {"mode": "fixed", "e4": c["e4"][fixed]})):
            if rows.any():
                g_e4[rows], g_man[rows], g_flg[rows] = bfp.renormalize(acc[rows], e3[rows], fmt, **kw)
        return g_e4, g_man, g_flg

    def _decode(self, outs: list[dict[str, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fmt: BfpFormat = self.params
        man = lanes(outs, "data", fmt.w, fmt.n, signed=True)
        e4 = signed(outs, "e4", fmt.e)
        flg = ints(outs, "flags")
        return e4, man, flg

    def check(self, items, outs):
        g_e4, g_man, g_flg = self.golden(items)
        d_e4, d_man, d_flg = self._decode(outs)
        bad = np.flatnonzero((d_e4 != g_e4) | (d_flg != g_flg) | (d_man != g_man).any(axis=1))
        errors = []
        for i in self.shown(bad):
            it = items[i]
            mode = f"fixed e4={it.e4}" if it.fixed else "max"
            errors.append(
                f"vector {i} ({it.kind}, {mode}): e3={it.e3} acc={it.acc.tolist()}\n"
                f"    DUT    e4={d_e4[i]} flags={bfp.decode_flags(int(d_flg[i]))} m={d_man[i].tolist()}\n"
                f"    golden e4={g_e4[i]} flags={bfp.decode_flags(int(g_flg[i]))} m={g_man[i].tolist()}"
            )
        errors += self.more(bad, "vectors")
        return errors, len(bad), bfp.sticky(g_flg)

    def define_coverage(self, cg: Covergroup) -> None:
        fmt: BfpFormat = self.params
        # The renormaliser can only raise these four; nan/inf/subn are checked to stay 0
        # by the scoreboard (exact flag compare), not covered as reachable bins.
        for name in ("zero", "exp_hi", "exp_lo", "ovf"):
            bit = bfp.FLAG_NAMES[name]
            cg.point(f"flag_{name}", lambda t, b=bit: bool(t["flags"] & b), [False, True])

        cg.point("e4", lambda t: exp_class(t["e4"], fmt), EXP_BINS)
        cg.point("mode", lambda t: "fixed" if t["fixed"] else "max", ["max", "fixed"])
        cg.point("kind", lambda t: t["kind"], [*RENORM_KINDS, "sticky"])
        # shift = e3 - e4: > 0 left, < 0 right; *_clip: beyond the hardware's clipped
        # amount (left > w, right >= acc_bits) on a nonzero vector.
        cg.point("shift", lambda t: t["shift"], ["left", "none", "right", "left_clip", "right_clip"])
        cg.point("e3_sign", lambda t: t["e3_sign"], ["neg", "zero", "pos"])
        cg.point("min_acc", lambda t: t["min_acc"], [False, True])
        if fmt.rounding == "rne":
            cg.point("round_up", lambda t: t["round_up"], [False, True])

    def sample_columns(self, items: list[RenormItem], outs: list[Beat]) -> dict[str, np.ndarray]:
        fmt: BfpFormat = self.params
        d_e4, d_man, d_flg = self._decode(outs)
        c = self.columns(items)
        acc, e3 = c["acc"], c["e3"]
        sh = e3 - d_e4
        nz = (acc != 0).any(axis=1)
        shift = np.select(
            [nz & (sh > fmt.w), nz & (-sh >= fmt.acc_bits), sh > 0, sh == 0],
            ["left_clip", "right_clip", "left", "none"], "right",
        )
        cols = {
            "flags": d_flg,
            "e4": d_e4,
            "fixed": c["fixed"],
            "kind": c["kind"],
            "shift": shift,
            "e3_sign": np.select([e3 < 0, e3 == 0], ["neg", "zero"], "pos"),
            "min_acc": (acc == -(1 << (fmt.acc_bits - 1))).any(axis=1),
        }
        if fmt.rounding == "rne":  # a round-up: a lane whose magnitude exceeds the TRUNC model's
            _, m_t, _ = self.golden(items, dataclasses.replace(fmt, rounding="trunc"), c)
            cols["round_up"] = (np.abs(d_man) > np.abs(m_t)).any(axis=1)
        return cols


class RenormTest(StreamTest):
    """Random vectors with idle cycles and back-pressure, checked against the model."""

    UNIT = RenormUnit


# ---- statistics mode (stretch) ------------------------------------------------------------
def _e3_span(fmt: BfpFormat, offset: int) -> tuple[int, int]:
    """The ``e3`` (in its ``e_sum_bits`` range) whose ``e3 + offset`` needs no clamp to
    ``[e_min, e_max]``: ``(lo, hi)``, empty when ``lo > hi``."""
    return max(fmt.e_sum_min, fmt.e_min - offset), min(fmt.e_sum_max, fmt.e_max - offset)


def _unclamped_e3(rng: np.random.Generator, fmt: BfpFormat, offset: int) -> int:
    """A random ``e3`` of :func:`_e3_span` (which must not be empty)."""
    lo, hi = _e3_span(fmt, offset)
    return int(rng.integers(lo, hi + 1))


def lop_bins(fmt: BfpFormat) -> list[int]:
    """The leading-one positions ``p`` (``0 .. acc_bits - 2``: a magnitude an
    accumulator lane holds, or a window of equal ones' ``mu + k*sigma``) whose exponent
    ``e3 + p - (w - 2)`` some ``e3`` shows unclamped: the bins of ``bfp.stats.max_lop``
    (the largest magnitude, max mode) and ``bfp.stats.window_lop`` (a window), and the
    positions the stimulus sweeps."""
    spans = ((p, _e3_span(fmt, p - (fmt.w - 2))) for p in range(min(fmt.acc_bits - 1, 63)))
    return [p for p, (lo, hi) in spans if lo <= hi]


def min_lop_ok(fmt: BfpFormat) -> bool:
    """Does some ``e3`` show the most negative accumulator value's leading one (bit
    ``acc_bits - 1`` of its magnitude) unclamped? (Then it is a bin of ``bfp.stats.max_lop``.)"""
    lo, hi = _e3_span(fmt, fmt.acc_bits - 1 - (fmt.w - 2))
    return fmt.acc_bits - 1 <= 63 and lo <= hi


def _lane_at(rng: np.random.Generator, p: int, size: int | None = None) -> np.ndarray:
    """Magnitudes with their leading one at bit ``p`` (uniform in ``[2**p, 2**(p+1))``)."""
    return (1 << p) + rng.integers(0, 1 << p, size=size, dtype=np.int64) if p else np.ones(size, np.int64)


#: The end of a statistics stimulus kind whose vector the DUT is reset before (option resets).
AFTER_RESET = "_reset"


def _stats_stream(rng: np.random.Generator, fmt: BfpFormat, count: int,
                  state: dict | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(acc (count, n), e3 (count,), kinds)``; ``state`` (a dict, empty at first) carries
    the sweeps from one call to the next (the stimulus is drawn chunk by chunk).

    First a *max-mode sweep* (kind ``sweep``): one vector per position of
    :func:`lop_bins` (and one all-zero vector), its largest magnitude's leading one
    there, in each lane in turn, and its ``e3`` such
    that max mode's exponent needs no clamp, ``e3`` changing from vector to vector (a
    window of more than one vector never completes, so all of them are max mode: every
    bit of the leading-one tree shows in ``e4``); then four whose max-mode exponent is
    ``e_max``, ``e_max + 1``, ``e_min`` and ``e_min - 1`` (each clamp at its edge; before
    the first window completes, max mode is the only place they show); then the most
    negative accumulator value in each lane in turn (kind ``sweep_min``: the one magnitude
    with its leading one at bit ``acc_bits - 1``); then *lane edges*
    (kind ``lane_edge``, :func:`lane_edge` below; before them kind ``sweep_lane``, each lane
    alone clamped at ``e_max`` so it overflows, shifted left and right): in each lane, one
    vector shifted to the
    largest mantissa and one half an ulp above it, where the exponent in force allows (the
    stream carries a selector to know it; a few more come at random later). Then
    segments of constant ``e3`` (so windows complete):
    Gaussian lanes at a per-segment scale, outlier lanes (overflow guard), zero vectors
    and corner vectors from :func:`acc_vectors`; and *flat* segments (kind ``flat``) of
    equal magnitudes at the next position of :func:`lop_bins` (so the window's
    ``mu + k*sigma`` has its leading one there) whose ``e3`` shows the resulting offset
    unclamped, and after every other flat window one vector whose ``e3`` puts the offset's
    exponent at ``e_max``, ``e_max + 1``, ``e_min`` or ``e_min - 1`` in turn (kind
    ``flat_edge``: each clamp of offset mode at its edge).

    With ``state["resets"]`` (option ``resets``, per-edge mode) the DUT is reset before
    every sweep vector and every opening lane edge, and under the reshift policy before
    every flat window (their kinds end in ``_reset``:
    :meth:`StatsUnit.resets`), so each is max mode whatever the window: where a window
    is one vector long, max mode otherwise lasts one vector per run (bfp_stats@cf22:
    a zero vector's and a clamp's exponent, and a lane's lone round-up overflow, in max
    mode, survived)."""
    n, w, a = fmt.n, fmt.w, fmt.acc_bits
    state = {} if state is None else state
    resets = bool(state.get("resets"))
    after_reset = AFTER_RESET if resets else ""
    nv = (1 << fmt.stat_log2_win) // n
    lo, hi = -(1 << (a - 1)), (1 << (a - 1)) - 1
    es_lo, es_hi = fmt.e_sum_min, fmt.e_sum_max
    accs, e3s, kinds = [], [], []

    def top_at(p: int) -> int:
        """A magnitude whose leading one is at ``p`` (at most the accumulator's maximum)."""
        return min(int(_lane_at(rng, p, 1)[0]), hi)

    def new_e3(off: int) -> int:
        """An unclamped ``e3`` for offset ``off``, other than the vector before's (a
        changed ``e3`` restarts the window)."""
        e3 = _unclamped_e3(rng, fmt, off)
        return (e3 + 1 if e3 < es_hi else e3 - 1) if e3s and e3 == e3s[-1] else e3

    sweep = [] if state.get("swept") else [(p, None) for p in rng.permutation([*lop_bins(fmt), -1]).tolist()]
    if sweep:   # then max mode's clamps (kind sweep_clamp), at and one past each end: e4 = e_max (no flag), e_max + 1, e_min, e_min - 1
        sweep += [(None, t) for t in (fmt.e_max, fmt.e_max + 1, fmt.e_min, fmt.e_min - 1)]
    state["swept"] = True
    for k, (p, t) in enumerate(sweep[:count]):   # p = -1: an all-zero vector (max mode's e_min)
        if t is not None:   # a leading one whose e3 fits and differs from the vector before's (no window)
            ps = [q for q in lop_bins(fmt) if es_lo <= t - (q - (w - 2)) <= es_hi and t - (q - (w - 2)) not in e3s[-1:]]
            if not ps:
                continue
            p = int(rng.choice(ps))
        v = np.minimum(_lane_at(rng, int(rng.integers(0, p + 1)), n), hi) if p > 0 else rng.integers(0, 2, n) * (p + 1)
        if p >= 0:
            v[k % n] = top_at(p)   # the largest in each lane in turn
        if t is None:
            e3 = new_e3(max(p, 0) - (w - 2))
        else:
            e3 = t - (p - (w - 2))
        accs.append(np.where(rng.random(n) < 0.5, -v, v).astype(np.int64))
        e3s.append(e3)
        kinds.append(("sweep" if t is None else "sweep_clamp") + after_reset)
    # Kind ``sweep_min``: the most negative accumulator value in each lane in turn, the
    # others smaller: its magnitude, 2**(a-1), has the one leading one (bit a - 1) no
    # positive value has (a stuck bit 35 of the 36-bit absmax survived: bfp_stats@84d6 m023)
    if sweep and min_lop_ok(fmt):
        for lane in range(n):
            if len(accs) >= count:
                break
            v = np.minimum(_lane_at(rng, int(rng.integers(0, a - 1)), n), hi)
            v = np.where(rng.random(n) < 0.5, -v, v).astype(np.int64)
            v[lane] = lo
            accs.append(v)
            e3s.append(new_e3(a - 1 - (w - 2)))
            kinds.append("sweep_min" + after_reset)
    # Kind ``sweep_lane``: each lane alone, its leading one where max mode's exponent is
    # e_max + 1 (clamped to e_max: the lane overflows), once shifted left (lop <= w - 2) and
    # once right: a lane's overflow detector shows only where no other lane overflows
    # (bfp_stats@cf22 m049, m093, m094: lanes 2 and 6's left-shift overflow dropped)
    for lane in range(n) if sweep else ():
        for left in (True, False):
            qs = [q for q in lop_bins(fmt) if (q <= w - 2) == left
                  and es_lo <= fmt.e_max + 1 - (q - (w - 2)) <= es_hi and fmt.e_max + 1 - (q - (w - 2)) not in e3s[-1:]]
            if not qs or len(accs) >= count:
                continue
            q = int(rng.choice(qs))
            v = np.zeros(n, np.int64)
            v[lane] = top_at(q) * int(rng.choice([-1, 1]))
            accs.append(v)
            e3s.append(fmt.e_max + 1 - (q - (w - 2)))
            kinds.append("sweep_lane" + after_reset)
    # The selector as the stream stands (the lane edges aim at the exponent in force).
    sel = state.setdefault("sel", bfp.StatsSelector(fmt))
    fed = 0

    def follow() -> None:
        """Run the selector over the vectors drawn since it last ran (reset where the DUT is)."""
        nonlocal fed
        while fed < len(accs):
            if kinds[fed].endswith(AFTER_RESET):
                sel.reset()
            stop = next((j for j in range(fed + 1, len(accs)) if kinds[j].endswith(AFTER_RESET)), len(accs))
            sel.run(np.array(accs[fed:stop], np.int64).reshape(-1, n), np.array(e3s[fed:stop], np.int64))
            fed = stop

    def lane_edge(lane: int, tie: bool, fresh: bool = False) -> bool:
        """Kind ``lane_edge``: one vector whose only non-zero lane shifts to exactly 2**(w-1) - 1 (the largest
        mantissa; ``tie``: plus half an ulp, which RNE rounds up to an overflow), the shift
        ``s >= 1`` that of the exponent in force: max mode's, or ``e3 + offset`` unclamped.
        False when the offset in force leaves no such shift. ``fresh``: after a reset (max mode)."""
        follow()
        top = a - w   # (2**(w-1) - 1) << s plus half an ulp fits the accumulator up to s = a - w
        if fresh or sel.offset is None:   # max mode: any shift
            s_ = int(rng.integers(1, top + 1)) if top >= 1 else 0
        else:
            s_ = sel.offset
        lo, hi_e3 = _e3_span(fmt, s_)
        if not (1 <= s_ <= top and lo <= hi_e3):
            return False
        e3 = _unclamped_e3(rng, fmt, s_)
        v = np.zeros(n, np.int64)
        v[lane] = (((1 << (w - 1)) - 1) << s_) + ((1 << (s_ - 1)) if tie else 0)
        accs.append(v * int(rng.choice([-1, 1])))
        e3s.append(e3)
        kinds.append("lane_edge" + (AFTER_RESET if fresh else ""))
        return True

    if not state.get("edged"):   # every lane on the edge once, both ways
        state["edged"] = True
        for k in range(2 * n):
            if len(accs) < count:
                lane_edge(k % n, k >= n, fresh=resets)
    # Kind ``lone``: in each lane in turn, a window whose only non-zero lane is that one
    # (a new e3 restarts the window): the window's statistics are that lane's alone, so a
    # lane whose square or magnitude never reached the sums shows (bfp_stats@cf22 m014:
    # lane 0's square dropped survived every Gaussian window).
    # (while the chunk keeps room for four such windows: two lanes of sixteen in the
    # patent's 400-vector per-edge run, whose windows are 64 vectors long)
    while state.setdefault("lone", 0) < n and count - len(accs) > 4 * (nv + 1):
        lane, state["lone"] = state["lone"], state["lone"] + 1
        p = int(rng.choice(lop_bins(fmt)))
        e3 = new_e3(p - (w - 2))
        for _ in range(nv + 1):
            v = np.zeros(n, np.int64)
            v[lane] = top_at(p) * int(rng.choice([-1, 1]))
            accs.append(v)
            e3s.append(e3)
            kinds.append("lone")

    def flat_edge() -> None:
        """Kind ``flat_edge``: a vector whose ``e3`` puts the offset in force's exponent at
        the next of ``e_max``, ``e_max + 1``, ``e_min``, ``e_min - 1`` (no guard: its
        largest magnitude within the offset's headroom). A changed ``e3`` restarts the
        window and keeps the offset (bfp_stats@cf22 m050, the upper clamp tested with
        ``>=``, survived: no offset-mode exponent fell on ``e_max`` itself)."""
        follow()
        if sel.offset is None:
            return
        edges = (fmt.e_max, fmt.e_max + 1, fmt.e_min, fmt.e_min - 1)
        k = state.get("edge", 0)
        e3 = edges[k % 4] - sel.offset
        if not es_lo <= e3 <= es_hi or e3 == e3s[-1]:
            return
        state["edge"] = k + 1
        # the guard's headroom from the clamped exponent: lop(max) <= e4 - e3 + w - 2
        room = min(min(max(edges[k % 4], fmt.e_min), fmt.e_max) - e3 + w - 2, a - 2)
        v = np.minimum(_lane_at(rng, int(rng.integers(0, room + 1)), n), hi) if room >= 0 else np.zeros(n, np.int64)
        if room >= 0:
            v[int(rng.integers(0, n))] = top_at(room)
        accs.append(np.where(rng.random(n) < 0.5, -v, v).astype(np.int64))
        e3s.append(e3)
        kinds.append("flat_edge")

    flat = state.setdefault("flat", [])
    corner, corner_kinds = acc_vectors(rng, fmt, count)
    names = list(RENORM_KINDS)
    while len(accs) < count:
        if rng.random() < 0.03 and lane_edge(int(rng.integers(0, n)), bool(rng.integers(0, 2))):
            continue
        length = int(rng.integers(1, 3 * nv + 3))
        if rng.random() < 0.5 and count - len(accs) > nv:   # a window of equal magnitudes, then its offset shown
            if not flat:
                flat += rng.permutation(lop_bins(fmt)).tolist()
            p = flat.pop()
            e3 = _unclamped_e3(rng, fmt, p - (w - 2))
            c = top_at(p)
            # reshift: a window completes above the offset in force only from reset
            fresh = after_reset if fmt.stat_policy != "sat" else ""
            for j in range(min(nv + int(rng.integers(1, 4)), count - len(accs))):
                accs.append(np.where(rng.random(n) < 0.5, -c, c).astype(np.int64))
                e3s.append(e3)
                kinds.append("flat" + (fresh if j == 0 else ""))
            state["turn"] = not state.get("turn")
            if len(accs) < count and state["turn"]:
                flat_edge()
            continue
        b = int(rng.integers(0, a - 1))  # lanes ~ N(0, 2**b)
        target = int(rng.integers(fmt.e_min - 2, fmt.e_max + 3))
        e3 = int(np.clip(target - b + (w - 2), es_lo, es_hi)) if rng.random() < 0.8 else int(rng.integers(es_lo, es_hi + 1))
        for _ in range(min(length, count - len(accs))):
            u = rng.random()
            if u < 0.05:
                v, kind = np.zeros(n, dtype=np.int64), "zero"
            elif u < 0.15:
                j = len(accs)
                v, kind = corner[j], "corner_" + names[corner_kinds[j]]
            else:
                g = np.clip(np.rint(rng.standard_normal(n) * float(2**b)), lo, hi)
                v, kind = g.astype(np.int64), "gauss"
                if rng.random() < 0.15:  # an outlier lane beyond mu + k*sigma
                    up = min(b + int(rng.integers(1, 5)), a - 1)
                    v[int(rng.integers(0, n))] = int(rng.choice([-1, 1])) * min((1 << up) - 1, hi)
                    kind = "outlier"
            accs.append(v)
            e3s.append(e3)
            kinds.append(kind)
    accs, e3s, kinds = accs[:count], e3s[:count], kinds[:count]
    follow()   # the selector follows the whole stream, chunk after chunk
    return np.array(accs, dtype=np.int64).reshape(count, n), np.array(e3s, dtype=np.int64), kinds


class StatsUnit(RenormUnit):
    """Statistics-mode selector: ``in_data/in_e3`` -> ``out_data/out_e4/out_flags``.

    The golden model is sequential (:class:`lockstep.models.bfp.StatsSelector`), run
    once over every accepted vector in acceptance order.
    """

    in_fields = ["data", "e3"]
    covergroup = "bfp.stats"

    def items(self, rng: np.random.Generator, count: int) -> list[RenormItem]:
        acc, e3, kinds = _stats_stream(rng, self.params, count, self._stim)
        cols = {"acc": acc, "e3": e3, "fixed": np.zeros(count, bool), "e4": np.zeros(count, np.int64),
                "kind": np.array(kinds, dtype=str)}
        return drawn_items(RenormItem, cols, _FIELDS)

    def encode(self, item: RenormItem) -> dict[str, int]:
        fmt: BfpFormat = self.params
        return {"data": pack_lanes(item.acc, fmt.acc_bits), "e3": int(item.e3) & ((1 << fmt.e_sum_bits) - 1)}

    def resets(self, items) -> np.ndarray:
        """The vectors the stimulus puts after a reset (kinds ending ``_reset``: option ``resets``)."""
        return np.char.endswith(np.asarray(self.columns(items)["kind"], dtype=str), AFTER_RESET)

    def __init__(self, ctx, params) -> None:
        super().__init__(ctx, params)
        # The selectors carry the window from one call to the next: the per-edge scoreboard
        # checks the whole run in one call, the throughput one chunk by chunk.
        self._gold = bfp.StatsSelector(params)
        self._cov = bfp.StatsSelector(params)
        self._stim: dict = {"resets": bool(ctx.opt("resets", False))}   # the stimulus's sweeps, chunk to chunk
        self._pending = (-1, 0)            # (lop, e3) of a window ending a chunk: shown by the next one

    def save_state(self):
        return copy.deepcopy((self._gold, self._cov, self._pending))

    def load_state(self, state) -> None:
        self._gold, self._cov, self._pending = copy.deepcopy(state)

    def golden(self, items, fmt=None, cols=None):
        fmt = fmt or self.params
        c = cols or self.columns(items)
        sel = self._gold if fmt == self.params else bfp.StatsSelector(fmt)
        return sel.run(c["acc"], c["e3"])

    def quiet(self, items) -> int | None:
        """A vector whose flags are 0 as the first after reset (the selector's flags
        depend on the window: each candidate runs alone through a fresh selector)."""
        c = self.columns(items)
        return next((i for i in range(min(len(items), 256))
                     if bfp.StatsSelector(self.params).run(c["acc"][i:i + 1], c["e3"][i:i + 1])[2][0] == 0), None)

    def check(self, items, outs):
        errors, bad, sticky = super().check(items, outs)
        return [e.replace(", max)", ", stats)") for e in errors], bad, sticky

    def define_coverage(self, cg: Covergroup) -> None:
        fmt: BfpFormat = self.params
        for name in ("zero", "exp_hi", "exp_lo", "ovf"):
            bit = bfp.FLAG_NAMES[name]
            cg.point(f"flag_{name}", lambda t, b=bit: bool(t["flags"] & b), [False, True])
        cg.point("phase", lambda t: t["phase"], ["max", "offset"])
        cg.point("guard", lambda t: t["guard"], [False, True])
        cg.point("restart", lambda t: t["restart"], [False, True])
        cg.point("window_end", lambda t: t["window_end"], [False, True])
        cg.point("kind", lambda t: t["kind"].split("_")[0], ["gauss", "outlier", "zero", "corner", "sweep", "flat",
                                                             "lone"])
        # the leading-one trees, position by position, where the output shows them: the
        # largest magnitude's in max mode with e4 unclamped; a window's mu + k*sigma with
        # the offset it sets unclamped on the next vector (-1: not such a vector). Max
        # mode lasts through the stimulus's opening sweep only when a window spans more
        # than one vector, or with a reset before each sweep vector (option resets); under
        # the reshift policy a window never completes above the offset in force (its
        # vectors are reshifted and not accumulated), so the offset climbs to every
        # position only from reset: without resets those configurations have no such point.
        # each clamp of the exponent at its edge (e_max and e_min unflagged, one past each
        # flagged): in offset mode, and in max mode where the sweep reaches it (a changed
        # e3 per vector keeps max mode, or a reset before each: option resets)
        edges = ["e_max", "above", "e_min", "below"]
        cg.point("offset_edge", lambda t: t["offset_edge"], edges)
        cg.point("lone_ovf", lambda t: t["lone_ovf"], list(range(fmt.n)))   # the lane of a lone lane's overflow
        if (1 << fmt.stat_log2_win) > fmt.n or self._stim["resets"]:
            cg.point("max_lop", lambda t: t["max_lop"], lop_bins(fmt) + ([fmt.acc_bits - 1] if min_lop_ok(fmt) else []))
            cg.point("max_zero", lambda t: t["max_zero"], [False, True])
            cg.point("max_edge", lambda t: t["max_edge"], edges)
        if fmt.stat_policy == "sat" or self._stim["resets"]:
            cg.point("window_lop", lambda t: t["window_lop"], lop_bins(fmt))

    def sample_columns(self, items: list[RenormItem], outs: list[Beat]) -> dict[str, np.ndarray]:
        """The cover fields, from a second selector traced over the same vectors
        (:meth:`~lockstep.models.bfp.StatsSelector.run_traced`: the selector's window
        state runs on from chunk to chunk)."""
        d_e4, _, d_flg = self._decode(outs)
        c = self.columns(items)
        acc, e3 = c["acc"], c["e3"]
        _, _, _, tr = self._cov.run_traced(acc, e3)
        clamp = bfp.FLAG_NAMES["exp_hi"] | bfp.FLAG_NAMES["exp_lo"]
        lop = tr["lop"]   # of the largest magnitude; -1: an all-zero vector
        shown = tr["max_mode"] & (lop >= 0) & ((d_flg & clamp) == 0)
        # a window's position counts on the next vector when that one shows the offset
        # unclamped (same e3, offset mode); the window may end the previous chunk
        prev_lop = np.concatenate([[self._pending[0]], np.where(tr["window_end"], tr["window_lop"], -1)[:-1]])
        prev_e3 = np.concatenate([[self._pending[1]], e3[:-1]])
        show = (prev_lop >= 0) & (e3 == prev_e3) & ~tr["max_mode"] & ((d_flg & clamp) == 0)
        wl = np.where(show, prev_lop, -1)
        if len(e3):
            self._pending = (int(tr["window_lop"][-1]) if tr["window_end"][-1] else -1, int(e3[-1]))
        flag_hi, flag_lo = (d_flg & bfp.FLAG_NAMES["exp_hi"]) != 0, (d_flg & bfp.FLAG_NAMES["exp_lo"]) != 0
        edge = np.select([flag_hi, flag_lo, d_e4 == self.params.e_max, d_e4 == self.params.e_min],
                         ["above", "below", "e_max", "e_min"], "-")
        return {
            "flags": d_flg,
            "offset_edge": np.where(~tr["max_mode"] & (lop >= 0), edge, "-"),
            "lone_ovf": np.where(((acc != 0).sum(axis=1) == 1) & ((d_flg & bfp.FLAG_NAMES["ovf"]) != 0),
                                 np.argmax(acc != 0, axis=1), -1),
            "max_edge": np.where(tr["max_mode"] & ~tr["guard"] & (lop >= 0), edge, "-"),
            "phase": np.where(tr["max_mode"] & ~tr["guard"], "max", "offset"),
            "guard": tr["guard"],
            "restart": tr["restart"],
            "window_end": tr["window_end"],
            "kind": c["kind"],
            "max_lop": np.where(shown, lop, -1),
            "max_zero": tr["max_mode"] & (lop < 0),
            "window_lop": wl,
        }


class StatsTest(StreamTest):
    """Segments of constant e3 with outliers, idle cycles and back-pressure."""

    UNIT = StatsUnit
