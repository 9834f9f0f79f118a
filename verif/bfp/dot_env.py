"""Testbench knowledge of the BFP dot-product unit (``bfp_dot``, spec 004 4.2(b)).

Plugs into :mod:`lockstep.verif.stream_env`: corner-biased stimulus (mantissa kinds
from random to all ``-2**(w-1)``, every exponent, bias off or with ``e6 = e5 - e3``
negative, zero, positive, huge, or on the saturation edge), a check that predicts every
transaction with :func:`lockstep.models.bfp.dot` (one call with the bias, one without),
and cover points over the bias, the ``e6`` class, ``OVF`` and its source, the
accumulator magnitude and the stimulus kinds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from lockstep.models import bfp
from lockstep.models.bfp.params import BfpFormat
from lockstep.verif.agents.stream import Beat
from lockstep.verif.columns import ints, signed
from lockstep.verif.coverage import Covergroup
from lockstep.verif.packing import pack_lanes
from lockstep.verif.stream_env import GoldenFlagsQuiet, StreamTest, StreamUnit
from lockstep.verif.bfp.stimulus import drawn_items, item_columns, pick_kinds

__all__ = ["DotItem", "DotUnit", "DotTest", "MANT_KINDS", "BIAS_KINDS", "dot_items"]

#: Mantissa kinds and their default weights.
MANT_KINDS: dict[str, float] = {
    "random": 4.0,  # uniform over [-2**(w-1), 2**(w-1)-1]
    "max_mixed": 1.0,  # every element +-m_max, random signs
    "max_pos": 1.0,  # +-m_max with matching signs: acc = n * m_max**2
    "min_neg": 1.0,  # every element -2**(w-1): acc = n * 2**(2w-2), the largest sum
    "min_mix": 1.0,  # a = -2**(w-1), b = m_max: the most negative sum
    "zero": 1.0,  # a or b (or both) all zero
    "sparse": 1.0,  # random, most lanes zero
    "small": 1.0,  # magnitudes <= 3
}

#: Bias kinds (how ``e6`` and the bias mantissa are chosen) and their default weights.
BIAS_KINDS: dict[str, float] = {
    "off": 3.0,  # no bias (bias and e5 still random on the bus)
    "e6_zero": 1.0,  # e6 = 0
    "e6_pos": 2.0,  # 0 < e6, feasible range
    "e6_neg": 2.0,  # -(w+2) <= e6 < 0: rounding of the shifted-out bits
    "tie": 1.0,  # e6 in [max(-3, 2 - w), -1], bias an odd multiple of 2**(-e6-1): exact ties
    "huge_pos": 1.0,  # e6 at the largest reachable value (>= A saturates any bias)
    "huge_neg": 1.0,  # e6 at the smallest reachable value (the bias vanishes)
    "edge": 3.0,  # e6 = (A-2) - lop|b| + {-1,0,1,2}: left-saturation and sum-overflow edge
    "sum_edge": 1.0,  # e6 = A - w, bias ~ sign(acc) * 2**(w-1): aligned fits, the sum overflows
    "clamp": 1.0,  # e6 = A or A + 1 (the left shift's clamp at A), bias -2**(w-1) or +-m_max
}


@dataclass
class DotItem:
    """One input transaction.

    Attributes:
        a, b: ``n`` mantissas each.
        ea, eb: their exponents.
        bias_en: the bias is added.
        bias: bias mantissa (on the bus even when disabled).
        e5: bias exponent.
        mkind, bkind: stimulus kinds (coverage and error messages).

    Testbench options: ``blocks``, ``idle``, ``backpressure``, ``mant_kinds`` /
    ``bias_kinds`` (kind -> weight).
    """

    a: np.ndarray
    ea: int
    b: np.ndarray
    eb: int
    bias_en: bool
    bias: int
    e5: int
    mkind: str = "random"
    bkind: str = "off"


_FIELDS = ["a", "ea", "b", "eb", "bias_en", "bias", "e5", "mkind", "bkind"]


def _pick(rng: np.random.Generator, table: dict[str, float], count: int, override) -> tuple[np.ndarray, list[str]]:
    """Kind index per transaction and the names they index."""
    kinds = dict(override) if override else table
    return pick_kinds(rng, kinds, count), list(kinds)


def _mantissas(rng: np.random.Generator, kind: np.ndarray, names: list[str], fmt: BfpFormat) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``, ``(count, n)`` each, of mantissa kinds ``names[kind]``."""
    count, n, mmax = len(kind), fmt.n, fmt.m_max
    lo = -(1 << (fmt.w - 1))
    # uniform: the "random" kind, and the lanes "zero" and "sparse" keep
    a = rng.integers(lo, mmax + 1, size=(count, n), dtype=np.int32).astype(np.int64)
    b = rng.integers(lo, mmax + 1, size=(count, n), dtype=np.int32).astype(np.int64)

    def rows(k: str) -> np.ndarray:
        return np.flatnonzero(kind == names.index(k)) if k in names else np.zeros(0, np.int64)

    def signs(m: int) -> np.ndarray:  # +-1, one random byte each
        return (np.frombuffer(rng.bytes(m * n), np.int8).reshape(m, n) >> 7 | 1).astype(np.int64)

    r = rows("small")
    a[r], b[r] = rng.integers(-3, 4, size=(2, len(r), n))
    r = rows("zero")  # a (z = 0), b (z = 1) or both (z = 2) all zero
    z = rng.integers(0, 3, size=len(r))
    a[r[z != 1]], b[r[z != 0]] = 0, 0
    r = rows("sparse")  # most lanes of a zero
    a[r] *= rng.random((len(r), n)) < 0.2
    r = rows("max_mixed")  # +-m_max, random signs
    a[r], b[r] = mmax * signs(len(r)), mmax * signs(len(r))
    r = rows("max_pos")  # +-m_max, matching signs
    a[r] = b[r] = mmax * signs(len(r))
    r = rows("min_neg")
    a[r], b[r] = lo, lo
    r = rows("min_mix")
    a[r], b[r] = lo, mmax
    return a, b


def _bias_values(rng: np.random.Generator, fmt: BfpFormat, count: int) -> np.ndarray:
    """Half uniform, half from the corners (+-m_max, -2**(w-1), 0, +-1, +-2**k, +-(2**k - 1))."""
    w, mmax = fmt.w, fmt.m_max
    corners = [mmax, -mmax, -(1 << (w - 1)), 0, 1, -1]
    corners += [s * (1 << k) for k in range(w - 1) for s in (1, -1)]
    corners += [s * ((1 << k) - 1) for k in range(2, w) for s in (1, -1)]
    uniform = rng.integers(-(1 << (w - 1)), mmax + 1, size=count)
    corner = np.array(corners, dtype=np.int64)[rng.integers(0, len(corners), size=count)]
    return np.where(rng.random(count) < 0.5, uniform, corner)


def _lop(mag: np.ndarray) -> np.ndarray:
    """floor(log2) of positive int64 magnitudes below 2**53 (-1 for 0)."""
    return np.where(mag > 0, np.frexp(np.maximum(mag, 1).astype(np.float64))[1] - 1, -1)


def _exponents(rng: np.random.Generator, fmt: BfpFormat, e6: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(ea, eb, e5)``: uniform where ``off``, else with ``e5 - ea - eb == e6`` (clipped to
    what is reachable)."""
    emin, emax, count = fmt.e_min, fmt.e_max, len(e6)
    v = rng.integers(emin, emax + 1, size=(count, 3))
    corner = rng.random((count, 3)) < 0.15  # the range ends, so e3 reaches 2*e_min and 2*e_max
    v = np.where(corner, np.where(rng.random((count, 3)) < 0.5, emin, emax), v)
    e3_zero = (rng.random(count) < 0.1) & (v[:, 0] > emin)  # e3 = 0
    v[:, 1] = np.where(e3_zero, -v[:, 0], v[:, 1])
    e6 = np.clip(e6, emin - 2 * emax, emax - 2 * emin)
    e5 = rng.integers(np.maximum(emin, e6 + 2 * emin), np.minimum(emax, e6 + 2 * emax) + 1)
    e3 = e5 - e6
    ea = rng.integers(np.maximum(emin, e3 - emax), np.minimum(emax, e3 - emin) + 1)
    return np.where(off, v[:, 0], ea), np.where(off, v[:, 1], e3 - ea), np.where(off, v[:, 2], e5)


def dot_columns(
    rng: np.random.Generator, fmt: BfpFormat, count: int, mant_kinds=None, bias_kinds=None
) -> dict[str, np.ndarray]:
    """``count`` reproducible transactions, column by column (one ``rng`` drives everything):
    ``a``, ``b`` ``(count, n)``; ``ea``, ``eb``, ``bias_en``, ``bias``, ``e5``, ``mkind``,
    ``bkind`` ``(count,)`` (the kinds as names)."""
    A, w, mmax = fmt.acc_bits, fmt.w, fmt.m_max
    e6_lo, e6_hi = fmt.e_min - 2 * fmt.e_max, fmt.e_max - 2 * fmt.e_min
    mk, mnames = _pick(rng, MANT_KINDS, count, mant_kinds)
    bk, bnames = _pick(rng, BIAS_KINDS, count, bias_kinds)
    a, b = _mantissas(rng, mk, mnames, fmt)
    bias = _bias_values(rng, fmt, count)
    is_ = {k: bk == bnames.index(k) if k in bnames else np.zeros(count, bool) for k in BIAS_KINDS}
    e6 = np.zeros(count, np.int64)  # e6_zero (and off: not used)
    e6 = np.where(is_["e6_pos"], rng.integers(1, min(e6_hi, A + 2) + 1, size=count), e6)
    e6 = np.where(is_["e6_neg"], rng.integers(-(w + 2), 0, size=count), e6)
    e6 = np.where(is_["huge_pos"], e6_hi, np.where(is_["huge_neg"], e6_lo, e6))
    sign = rng.integers(0, 2, size=count) * 2 - 1
    # tie: a bias with bit -e6-1 set that fits in w bits, so e6 >= 2 - w
    e6_tie = rng.integers(max(-3, 2 - w), 0, size=count)
    odd = rng.integers(0, np.int64(1) << (w - 2 + e6_tie)) * 2 + 1
    e6 = np.where(is_["tie"], e6_tie, e6)
    bias = np.where(is_["tie"], sign * (odd << (-e6_tie - 1)), bias)
    # sum_edge: aligned bias ~ sign(acc) * 2**(w-1) at e6 = A - w, so the sum overflows
    small = rng.integers(0, 4, size=count)
    acc_pos = np.einsum("ij,ij->i", a, b) >= 0  # |a.b| < 2**62: exact in int64
    neg_edge = np.where(rng.random(count) < 0.3, -(1 << (w - 1)), -(mmax - small))
    e6 = np.where(is_["sum_edge"], A - w, e6)
    bias = np.where(is_["sum_edge"], np.where(acc_pos, mmax - small, neg_edge), bias)
    # edge: e6 = (A-2) - lop|bias| + {-1, 0, 1, 2}, a nonzero bias
    nonzero = sign * rng.integers(1, mmax + 1, size=count)
    bias = np.where(is_["edge"] & (bias == 0), nonzero, bias)
    e6 = np.where(is_["edge"], (A - 2) - _lop(np.abs(bias)) + rng.integers(-1, 3, size=count), e6)
    # clamp: the left shift stops at A; -2**(w-1) shifted by A + 1 loses its only set bit
    # beyond the register, so a clamp one too high reads it as 0 (bfp_dot@619a m081)
    e6 = np.where(is_["clamp"], A + (rng.random(count) < 0.75), e6)
    bias = np.where(is_["clamp"], np.where(rng.random(count) < 0.5, -(1 << (w - 1)), sign * mmax), bias)
    off = is_["off"]
    ea, eb, e5 = _exponents(rng, fmt, e6, off)
    return {
        "a": a, "ea": ea, "b": b, "eb": eb, "bias_en": ~off, "bias": bias.astype(np.int64), "e5": e5,
        "mkind": np.array(mnames)[mk], "bkind": np.array(bnames)[bk],
    }


def dot_items(rng: np.random.Generator, fmt: BfpFormat, count: int, mant_kinds=None, bias_kinds=None) -> list[DotItem]:
    """``count`` reproducible transactions (:func:`dot_columns`, one :class:`DotItem` each)."""
    return drawn_items(DotItem, dot_columns(rng, fmt, count, mant_kinds, bias_kinds), _FIELDS)


class DotUnit(GoldenFlagsQuiet, StreamUnit):
    """The dot unit: ``in_a/ea/b/eb/bias_en/bias/e5`` -> ``out_acc/e3/flags``."""

    params_type = BfpFormat
    in_fields = ["a", "ea", "b", "eb", "bias_en", "bias", "e5"]
    out_fields = ["acc", "e3", "flags"]
    covergroup = "bfp.dot"

    def items(self, rng: np.random.Generator, count: int) -> list[DotItem]:
        return dot_items(rng, self.params, count, self.ctx.opt("mant_kinds", None), self.ctx.opt("bias_kinds", None))

    def encode(self, item: DotItem) -> dict[str, int]:
        fmt: BfpFormat = self.params
        em = (1 << fmt.e) - 1
        return {
            "a": pack_lanes(item.a, fmt.w),
            "ea": item.ea & em,
            "b": pack_lanes(item.b, fmt.w),
            "eb": item.eb & em,
            "bias_en": int(item.bias_en),
            "bias": item.bias & ((1 << fmt.w) - 1),
            "e5": item.e5 & em,
        }

    def columns(self, items: list[DotItem]) -> dict[str, np.ndarray]:
        """The fields of ``items``, column by column (unencoded: signed values)."""
        c = item_columns(items, _FIELDS)
        n = len(items)
        for k in _FIELDS[:7]:
            c[k] = c[k].astype(bool if k == "bias_en" else np.int64, copy=False)
        c["a"], c["b"] = c["a"].reshape(n, self.params.n), c["b"].reshape(n, self.params.n)
        return c

    def encode_columns(self, items: list[DotItem]) -> dict[str, np.ndarray]:
        fmt: BfpFormat = self.params
        em, wm = (1 << fmt.e) - 1, (1 << fmt.w) - 1
        c = self.columns(items)
        return {
            "a": c["a"] & wm, "ea": c["ea"] & em, "b": c["b"] & wm, "eb": c["eb"] & em,
            "bias_en": c["bias_en"].astype(np.int64), "bias": c["bias"] & wm, "e5": c["e5"] & em,
        }

    def golden(
        self, items: list[DotItem], fmt: BfpFormat | None = None, cols: dict[str, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Model outputs: one :func:`bfp.dot` call with the bias, one without, picked per row."""
        fmt = fmt or self.params
        c = cols or self.columns(items)
        acc0, e3, fl0 = bfp.dot(c["a"], c["ea"], c["b"], c["eb"], fmt)
        acc1, _, fl1 = bfp.dot(c["a"], c["ea"], c["b"], c["eb"], fmt, bias=c["bias"], e5=c["e5"])
        en = c["bias_en"]
        return np.where(en, acc1, acc0), e3, np.where(en, fl1, fl0)

    def _decode(self, outs: list[dict[str, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fmt: BfpFormat = self.params
        acc = signed(outs, "acc", fmt.acc_bits)
        e3 = signed(outs, "e3", fmt.e_sum_bits)
        flg = ints(outs, "flags")
        return acc, e3, flg

    def check(self, items, outs):
        g_acc, g_e3, g_flg = self.golden(items)
        d_acc, d_e3, d_flg = self._decode(outs)
        bad = np.flatnonzero((d_acc != g_acc) | (d_e3 != g_e3) | (d_flg != g_flg))
        errors = []
        for i in self.shown(bad):
            it = items[i]
            bias = f"bias={it.bias} e5={it.e5} (e6={it.e5 - it.ea - it.eb})" if it.bias_en else "no bias"
            errors.append(
                f"transaction {i} ({it.mkind}/{it.bkind}): a={it.a.tolist()} ea={it.ea} "
                f"b={it.b.tolist()} eb={it.eb} {bias}\n"
                f"    DUT    acc={d_acc[i]} e3={d_e3[i]} flags={bfp.decode_flags(int(d_flg[i]))}\n"
                f"    golden acc={g_acc[i]} e3={g_e3[i]} flags={bfp.decode_flags(int(g_flg[i]))}"
            )
        errors += self.more(bad, "transactions")
        return errors, len(bad), bfp.sticky(g_flg)

    def define_coverage(self, cg: Covergroup) -> None:
        fmt: BfpFormat = self.params
        cg.point("flag_ovf", lambda t: bool(t["flags"] & bfp.FLAG_OVF), [False, True])
        # Only OVF belongs to the dot product; the other family flags must stay clear.
        cg.point("other_flags_clear", lambda t: t["flags"] & ~bfp.FLAG_OVF == 0, [True])
        cg.point("bias_en", lambda t: t["bias_en"], [False, True])
        cg.point("e6_class", lambda t: t["e6_class"], ["off", "vanish", "neg", "zero", "pos", "huge"])
        cg.point("ovf_source", lambda t: t["ovf_source"], ["none", "align", "sum"])
        cg.point("acc_class", lambda t: t["acc_class"], ["zero", "small", "mid", "near_max", "sat"])
        cg.point("e3_class", lambda t: t["e3_class"], ["min", "neg", "zero", "pos", "max"])
        cg.point("mant_kind", lambda t: t["mkind"], list(MANT_KINDS))
        cg.point("bias_kind", lambda t: t["bkind"], list(BIAS_KINDS))
        if fmt.rounding == "rne":
            cg.point("round_up", lambda t: t["round_up"], [False, True])

    def sample_columns(self, items: list[DotItem], outs: list[Beat]) -> dict[str, np.ndarray]:
        fmt: BfpFormat = self.params
        A, w = fmt.acc_bits, fmt.w
        d_acc, d_e3, d_flg = self._decode(outs)
        c = self.columns(items)
        en, bias = c["bias_en"], c["bias"]
        e6 = c["e5"] - c["ea"] - c["eb"]
        e6c = np.select(
            [~en, e6 >= A, e6 <= -(w + 1), e6 < 0, e6 == 0], ["off", "huge", "vanish", "neg", "zero"], "pos"
        )
        # Which saturation stage fired: "align" when the bias shifted left by e6 leaves the
        # A-bit range (|bias| * 2**e6 > 2**(A-1) - 1, or > 2**(A-1) for a negative bias).
        mag = np.abs(bias)
        lop = np.frexp(np.maximum(mag, 1).astype(np.float64))[1] - 1
        top = lop + e6
        pow2 = (mag & (mag - 1)) == 0
        out = (mag != 0) & ((top > A - 1) | ((top == A - 1) & ((bias > 0) | ~pow2)))
        ovf = (d_flg & bfp.FLAG_OVF) != 0
        src = np.where(ovf, np.where((e6 >= 0) & out, "align", "sum"), "none")
        # |acc| as uint64: exact for -2**63 too (A = 64)
        amag = np.abs(d_acc).astype(np.uint64)
        lim = np.uint64((1 << (A - 1)) - 1)
        ac = np.select(
            [amag == 0, amag == lim, amag >= np.uint64(1 << (A - 2)), amag < np.uint64(1 << w)],
            ["zero", "sat", "near_max", "small"], "mid",
        )
        e3c = np.select(
            [d_e3 == 2 * fmt.e_min, d_e3 == 2 * fmt.e_max, d_e3 < 0, d_e3 == 0], ["min", "max", "neg", "zero"], "pos"
        )
        cols = {
            "flags": d_flg,
            "bias_en": en,
            "e6_class": e6c,
            "ovf_source": src,
            "acc_class": ac,
            "e3_class": e3c,
            "mkind": c["mkind"],
            "bkind": c["bkind"],
        }
        if fmt.rounding == "rne":  # RNE changed the aligned bias (a round-up of its magnitude)
            cols["round_up"] = d_acc != self.golden(items, dataclasses.replace(fmt, rounding="trunc"), c)[0]
        return cols


class DotTest(StreamTest):
    """Random transactions with idle cycles and back-pressure, checked against the model."""

    UNIT = DotUnit
